//! The bodies of list answers and the query that pages them: one generic page type for every
//! paged list (`{items, nextCursor, hasMore, totalCount}`, DESIGN.md "Lists") and one for the
//! short lists that are never paged (`{items}`), each named per resource in the OpenAPI
//! document (`ClientPage`, `SnapshotList`, …) by its item type's [`Listed`] or [`Itemized`]
//! impl, so the document's component names stay what clients were generated from.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use tessera_kernel::Page;
use utoipa::{
    IntoParams, PartialSchema, ToSchema,
    openapi::{
        KnownFormat, ObjectBuilder, Ref, RefOr, Schema, SchemaFormat, Type,
        schema::{ArrayBuilder, SchemaType},
    },
};
use validator::Validate;

/// An item type lists answer in pages: what its page is called in the OpenAPI document.
pub trait Listed: ToSchema {
    /// The page's component name, e.g. `ClientPage`.
    const PAGE: &'static str;
    /// The page's description, e.g. "A page of clients."
    const PAGE_DESCRIPTION: &'static str;
}

/// One page of a list.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PageOf<T> {
    pub items: Vec<T>,
    /// Where the next page starts; `None` on the last page.
    pub next_cursor: Option<String>,
    pub has_more: bool,
    pub total_count: Option<u64>,
}

impl<T> PageOf<T> {
    /// The body of a domain page, each item converted by `item`.
    pub fn of<U>(mut page: Page<U>, item: impl FnMut(U) -> T) -> Self {
        let items = std::mem::take(&mut page.items)
            .into_iter()
            .map(item)
            .collect();
        Self::with_items(page, items)
    }

    /// The body of a domain page whose items were converted elsewhere (`items`, in order).
    pub fn with_items<U>(page: Page<U>, items: Vec<T>) -> Self {
        Self {
            items,
            next_cursor: page.next_cursor.map(|cursor| cursor.as_str().to_owned()),
            has_more: page.has_more,
            total_count: page.total_count,
        }
    }
}

impl<T, U: Into<T>> From<Page<U>> for PageOf<T> {
    fn from(page: Page<U>) -> Self {
        Self::of(page, Into::into)
    }
}

impl<T: Listed> PartialSchema for PageOf<T> {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .description(Some(T::PAGE_DESCRIPTION))
            .property("items", items_of::<T>())
            .required("items")
            .property("nextCursor", nullable(Type::String))
            .property("hasMore", ObjectBuilder::new().schema_type(Type::Boolean))
            .required("hasMore")
            .property(
                "totalCount",
                nullable(Type::Integer)
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                    .minimum(Some(0)),
            )
            .into()
    }
}

impl<T: Listed> ToSchema for PageOf<T> {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed(T::PAGE)
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        item_schemas::<T>(schemas);
    }
}

/// An item type some lists answer whole, never paged: what that list is called.
pub trait Itemized: ToSchema {
    /// The list's component name, e.g. `SnapshotList`.
    const LIST: &'static str;
    /// The list's description.
    const LIST_DESCRIPTION: &'static str;
}

/// A whole (short) list.
#[derive(Debug, Serialize)]
pub struct ListOf<T> {
    pub items: Vec<T>,
}

impl<T> FromIterator<T> for ListOf<T> {
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Self {
        Self {
            items: items.into_iter().collect(),
        }
    }
}

impl<T: Itemized> PartialSchema for ListOf<T> {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .description(Some(T::LIST_DESCRIPTION))
            .property("items", items_of::<T>())
            .required("items")
            .into()
    }
}

impl<T: Itemized> ToSchema for ListOf<T> {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed(T::LIST)
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        item_schemas::<T>(schemas);
    }
}

/// `items`: an array of references to the item's schema.
fn items_of<T: ToSchema>() -> ArrayBuilder {
    ArrayBuilder::new().items(Ref::from_schema_name(T::name()))
}

/// The item's schema and those it refers to: what a list's `ToSchema::schemas` adds.
fn item_schemas<T: ToSchema>(schemas: &mut Vec<(String, RefOr<Schema>)>) {
    schemas.push((T::name().into_owned(), T::schema()));
    T::schemas(schemas);
}

fn nullable(kind: Type) -> ObjectBuilder {
    ObjectBuilder::new().schema_type(SchemaType::from_iter([kind, Type::Null]))
}

/// Which page of a list to answer.
#[derive(Debug, Deserialize, Validate, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// 1 to 100, default 20.
    #[validate(range(min = 1, max = 100))]
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    /// `nextCursor` of the previous page.
    pub cursor: Option<String>,
}

/// Declares the page of `$item` under the name `$page` (a `PageOf<$item>` described by
/// `$description` in the OpenAPI document).
#[macro_export]
macro_rules! paged {
    ($item:ty => $page:ident, $description:literal) => {
        #[doc = $description]
        pub type $page = $crate::page::PageOf<$item>;

        impl $crate::page::Listed for $item {
            const PAGE: &'static str = stringify!($page);
            const PAGE_DESCRIPTION: &'static str = $description;
        }
    };
}

/// Declares the whole list of `$item` under the name `$list`, like [`paged!`].
#[macro_export]
macro_rules! itemized {
    ($item:ty => $list:ident, $description:literal) => {
        #[doc = $description]
        pub type $list = $crate::page::ListOf<$item>;

        impl $crate::page::Itemized for $item {
            const LIST: &'static str = stringify!($list);
            const LIST_DESCRIPTION: &'static str = $description;
        }
    };
}
