//! Batch statements on PostgreSQL whose text does not depend on the batch's size: each column
//! is bound as one array and the rows come from `unnest` of those arrays. A multi-row
//! `VALUES` list is a new statement for every row count (diesel does not cache it, so
//! PostgreSQL parses and plans it for every batch, and its parameter count grows with the
//! batch); these are prepared once per connection and their plans are reused.

/// Declares a statement over a batch of rows: a struct holding one array per column (borrowed
/// from the rows), a static query id (one prepared statement per connection), and its SQL.
///
/// `insert into TABLE` writes `INSERT INTO TABLE (columns…) SELECT * FROM unnest(arrays…)`
/// followed by `then`; `sql (BEFORE, AFTER)` writes `BEFORE arrays… AFTER`.
macro_rules! unnest_statement {
    (
        $(#[$doc:meta])*
        struct $name:ident<$lt:lifetime> for |$row:ident: &$row_type:ty| {
            $($column:ident: $sql_type:ty as $rust:ty = $value:expr),+ $(,)?
        }
        insert into $table:literal then $after:literal;
    ) => {
        $crate::unnest::unnest_statement! {
            $(#[$doc])*
            struct $name<$lt> for |$row: &$row_type| {
                $($column: $sql_type as $rust = $value),+
            }
            sql (
                concat!(
                    "INSERT INTO ", $table, " (",
                    $crate::unnest::unnest_statement!(@list $($column),+),
                    ") SELECT * FROM unnest("
                ),
                concat!(")", $after)
            );
        }
    };
    (
        $(#[$doc:meta])*
        struct $name:ident<$lt:lifetime> for |$row:ident: &$row_type:ty| {
            $($column:ident: $sql_type:ty as $rust:ty = $value:expr),+ $(,)?
        }
        sql ($before:expr, $after:expr);
    ) => {
        $(#[$doc])*
        pub(crate) struct $name<$lt> {
            $($column: Vec<&$lt $rust>,)+
        }

        impl<$lt> $name<$lt> {
            pub(crate) fn new(rows: impl IntoIterator<Item = &$lt $row_type>) -> Self {
                let mut columns = Self { $($column: Vec::new(),)+ };
                for $row in rows {
                    $(columns.$column.push($value);)+
                }
                columns
            }
        }

        $crate::unnest::static_query_id!($name);

        impl<$lt> diesel::query_builder::QueryFragment<diesel::pg::Pg> for $name<$lt> {
            fn walk_ast<'__b>(
                &'__b self,
                mut out: diesel::query_builder::AstPass<'_, '__b, diesel::pg::Pg>,
            ) -> diesel::QueryResult<()> {
                out.push_sql($before);
                let mut first = true;
                $(
                    if !std::mem::take(&mut first) {
                        out.push_sql(", ");
                    }
                    out.push_bind_param::<diesel::sql_types::Array<$sql_type>, _>(&self.$column)?;
                )+
                let _ = first;
                out.push_sql($after);
                Ok(())
            }
        }
    };
    (@list $first:ident $(, $rest:ident)*) => {
        concat!(stringify!($first) $(, ", ", stringify!($rest))*)
    };
}
pub(crate) use unnest_statement;

/// Gives a statement type with one lifetime a static query id: one prepared statement per
/// connection, whatever the values bound.
macro_rules! static_query_id {
    ($name:ident) => {
        impl diesel::query_builder::QueryId for $name<'_> {
            type QueryId = $name<'static>;
            const HAS_STATIC_QUERY_ID: bool = true;
        }
    };
}
pub(crate) use static_query_id;
