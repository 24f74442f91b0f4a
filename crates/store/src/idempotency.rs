use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use tessera_idempotency::{
    Claim, Fingerprint, IdempotencyKey, IdempotencyStore, KeyOwner, StoredRecord, StoredResponse,
};
use tessera_kernel::DomainError;

use crate::time::utc;
use crate::{Database, database::with_connection, error::query_error, schema::idempotency_keys};

/// `IdempotencyStore` on PostgreSQL or SQLite.
#[derive(Clone)]
pub struct SqlIdempotencyStore {
    db: Database,
}

impl SqlIdempotencyStore {
    pub fn new(db: Database) -> Self {
        Self { db }
    }
}

/// How many times `claim` looks again when the record it collided with vanished meanwhile.
const CLAIM_ATTEMPTS: usize = 3;

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = idempotency_keys)]
struct KeyRow {
    organization_id: String,
    principal: String,
    idempotency_key: String,
    fingerprint: String,
    response_status: Option<i32>,
    response_headers: Option<String>,
    response_body: Option<Vec<u8>>,
    created_at: chrono::NaiveDateTime,
    expires_at: chrono::NaiveDateTime,
}

/// Headers as `name: value` lines (header values cannot contain line breaks).
fn encode_headers(headers: &[(String, String)]) -> String {
    headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn decode_headers(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| line.split_once(": "))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}

impl TryFrom<KeyRow> for StoredRecord {
    type Error = DomainError;

    fn try_from(row: KeyRow) -> Result<Self, Self::Error> {
        let response = match row.response_status {
            None => None,
            Some(status) => Some(StoredResponse {
                status: u16::try_from(status).map_err(|_| {
                    DomainError::internal(format!("idempotency record status {status}"))
                })?,
                headers: decode_headers(row.response_headers.as_deref().unwrap_or_default()),
                body: row.response_body,
            }),
        };
        Ok(StoredRecord {
            fingerprint: Fingerprint::from_stored(row.fingerprint),
            response,
            expires_at: utc(row.expires_at),
        })
    }
}

macro_rules! this_key {
    ($owner:expr, $key:expr) => {
        idempotency_keys::table
            .filter(idempotency_keys::organization_id.eq($owner.organization_id.as_str()))
            .filter(idempotency_keys::principal.eq(&$owner.principal))
            .filter(idempotency_keys::idempotency_key.eq($key.as_str()))
    };
}

#[async_trait]
impl IdempotencyStore for SqlIdempotencyStore {
    async fn claim(
        &self,
        owner: &KeyOwner,
        key: &IdempotencyKey,
        fingerprint: &Fingerprint,
        now: DateTime<Utc>,
        expires_at: DateTime<Utc>,
    ) -> Result<Claim, DomainError> {
        let row = KeyRow {
            organization_id: owner.organization_id.as_str().to_owned(),
            principal: owner.principal.clone(),
            idempotency_key: key.as_str().to_owned(),
            fingerprint: fingerprint.as_str().to_owned(),
            response_status: None,
            response_headers: None,
            response_body: None,
            created_at: now.naive_utc(),
            expires_at: expires_at.naive_utc(),
        };
        let now = now.naive_utc();
        for _ in 0..CLAIM_ATTEMPTS {
            // The insert is the claim: of concurrent requests with one key, exactly one
            // inserts; the others see its row.
            let existing: Option<KeyRow> = with_connection!(&self.db, conn => {
                diesel::delete(this_key!(owner, key).filter(idempotency_keys::expires_at.le(now)))
                    .execute(conn)
                    .await
                    .map_err(query_error)?;
                let inserted = diesel::insert_into(idempotency_keys::table)
                    .values(&row)
                    .on_conflict_do_nothing()
                    .execute(conn)
                    .await
                    .map_err(query_error)?;
                if inserted == 1 {
                    return Ok(Claim::Claimed);
                }
                this_key!(owner, key)
                    .select(KeyRow::as_select())
                    .first(conn)
                    .await
                    .optional()
                    .map_err(query_error)?
            });
            if let Some(existing) = existing {
                return Ok(Claim::Taken(StoredRecord::try_from(existing)?));
            }
        }
        Err(DomainError::Conflict {
            code: "idempotency_key_in_flight",
            message: "the idempotency key is changing hands; retry".into(),
        })
    }

    async fn complete(
        &self,
        owner: &KeyOwner,
        key: &IdempotencyKey,
        response: &StoredResponse,
    ) -> Result<(), DomainError> {
        let headers = encode_headers(&response.headers);
        let status = i32::from(response.status);
        with_connection!(&self.db, conn => {
            diesel::update(this_key!(owner, key))
                .set((
                    idempotency_keys::response_status.eq(Some(status)),
                    idempotency_keys::response_headers.eq(Some(&headers)),
                    idempotency_keys::response_body.eq(response.body.as_deref()),
                ))
                .execute(conn)
                .await
                .map_err(query_error)?;
        });
        Ok(())
    }

    async fn release(&self, owner: &KeyOwner, key: &IdempotencyKey) -> Result<(), DomainError> {
        with_connection!(&self.db, conn => {
            diesel::delete(this_key!(owner, key).filter(idempotency_keys::response_status.is_null()))
                .execute(conn)
                .await
                .map_err(query_error)?;
        });
        Ok(())
    }

    async fn purge_expired(&self, now: DateTime<Utc>) -> Result<u64, DomainError> {
        let now = now.naive_utc();
        let deleted: usize = with_connection!(&self.db, conn => {
            diesel::delete(idempotency_keys::table.filter(idempotency_keys::expires_at.lt(now)))
                .execute(conn)
                .await
                .map_err(query_error)?
        });
        Ok(deleted as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_survive_the_line_encoding() {
        let headers = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("location".to_owned(), "/v1/particles/par_1".to_owned()),
        ];
        assert_eq!(decode_headers(&encode_headers(&headers)), headers);
        assert_eq!(decode_headers(""), vec![]);
    }
}
