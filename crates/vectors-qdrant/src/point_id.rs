//! Deterministic point ids, so upserting a chunk again replaces it.

use tessera_kernel::OrganizationId;
use tessera_knowledge::FileId;
use uuid::Uuid;

/// The namespace of Tessera's chunk ids (UUIDv5).
const NAMESPACE: Uuid = Uuid::from_u128(0x6f1c_2a7e_93d4_4b0a_8e55_1d2c_7b9f_3a64);

/// The id of a chunk's point: a UUIDv5 of its organization, file and ordinal. File ids are
/// unique on their own; the organization is included so tenants can never collide.
pub fn point_id(organization: &OrganizationId, file_id: &FileId, ordinal: u32) -> Uuid {
    let name = format!("{organization}/{file_id}/{ordinal}");
    Uuid::new_v5(&NAMESPACE, name.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_distinct() -> Result<(), Box<dyn std::error::Error>> {
        let org: OrganizationId = "org_a".parse()?;
        let file: FileId = "file_0123456789abcdef0123456789abcdef".parse()?;
        assert_eq!(point_id(&org, &file, 3), point_id(&org, &file, 3));
        assert_ne!(point_id(&org, &file, 3), point_id(&org, &file, 4));
        assert_ne!(
            point_id(&org, &file, 3),
            point_id(&"org_b".parse()?, &file, 3)
        );
        assert_eq!(point_id(&org, &file, 3).get_version_num(), 5);
        Ok(())
    }
}
