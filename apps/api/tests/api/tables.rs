//! DOCX tables end to end, through the real HTTP stack on SQLite and PostgreSQL with the real
//! embedding model: a 40-row table is chunked as whole markdown rows under its repeated header
//! row, and a question about one row finds that row's chunk first.

use serde_json::json;
use tessera_documents::testing::{
    INVENTORY_HEADER, docx_with_table, inventory_product, inventory_rows, inventory_stock,
};
use tessera_store::Backend;

use crate::{
    processing::{knowledge_app_with, search},
    rag::dataset_with,
};

const SCOPES: &str = "files:read files:write datasets:read datasets:write";

async fn a_question_about_one_table_row_finds_its_chunk_with_the_header(backend: Backend) {
    let app = knowledge_app_with(backend, |_| {}).await;
    let token = app.caller_token(SCOPES).await;
    let rows = inventory_rows(40);
    let dataset = dataset_with(
        &app,
        &token,
        "Inventory",
        &[("stock.docx", docx_with_table(&rows))],
    )
    .await;

    let product = inventory_product(37);
    let hits = search(
        &app,
        &token,
        &dataset,
        json!({"query": format!("How many {product}s are in stock?"), "limit": 3}),
    )
    .await;
    let best = &hits.first().unwrap_or_else(|| panic!("no hit"))["text"];
    let best = best.as_str().unwrap();
    let header = format!(
        "| {} |\n|{}\n",
        INVENTORY_HEADER.join(" | "),
        " --- |".repeat(INVENTORY_HEADER.len())
    );
    let row_37 = format!("| {} |", rows[37].join(" | "));
    assert!(row_37.contains(&product) && row_37.contains(&inventory_stock(37)));
    assert!(best.starts_with(&header), "{hits:#?}");
    assert!(
        best.lines().any(|line| line == row_37),
        "row 37 whole in the best hit: {hits:#?}"
    );
    assert_eq!(hits[0]["section"], "Warehouse handbook > Stock list");
    app.stop().await;
}

tessera_store::on_both_databases!(a_question_about_one_table_row_finds_its_chunk_with_the_header);
