//! A BEIR-format collection (corpus, queries, graded judgements) and trec_eval's measures
//! over it, for the benchmarks that drive the real application. The same definitions as
//! `crates/vectors-qdrant/benches/retrieval_quality.rs` (a copy, until the two are merged).
//! Included by `#[path]` (each benchmark is its own crate).

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    time::Duration,
};

use anyhow::{Context, bail};

/// The judged documents of each query, with their grades (> 0).
pub type Judgements = HashMap<String, HashMap<String, u32>>;

/// One document of the corpus.
pub struct Document {
    pub id: String,
    pub title: String,
    pub text: String,
}

/// A BEIR-format set: corpus, the judged queries, judgements.
pub struct Collection {
    pub name: String,
    pub documents: Vec<Document>,
    /// `(id, text)` of the queries that have judgements, in the file's order.
    pub queries: Vec<(String, String)>,
    pub judgements: Judgements,
}

fn jsonl(path: &Path) -> anyhow::Result<Vec<serde_json::Value>> {
    std::fs::read_to_string(path)
        .with_context(|| path.display().to_string())?
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).context("a JSON line"))
        .collect()
}

fn text(value: &serde_json::Value, key: &str) -> String {
    value[key].as_str().unwrap_or_default().to_owned()
}

/// The first of `names` under `dir` that exists (BEIR sets are packed in two layouts).
fn first_of(dir: &Path, names: &[&str]) -> anyhow::Result<PathBuf> {
    names
        .iter()
        .map(|name| dir.join(name))
        .find(|path| path.is_file())
        .with_context(|| format!("none of {names:?} under {}", dir.display()))
}

/// The judgements of a qrels file (a header line, then `query corpus grade`); grade 0 is
/// "judged not relevant", which neither gains nor counts as relevant.
fn judgements(path: &Path) -> anyhow::Result<Judgements> {
    let mut judged: Judgements = HashMap::new();
    for line in std::fs::read_to_string(path)?.lines().skip(1) {
        let fields: Vec<&str> = line.split('\t').collect();
        if let [query, doc, grade] = fields.as_slice()
            && let Ok(grade) = grade.trim().parse::<u32>()
            && grade > 0
        {
            judged
                .entry((*query).to_owned())
                .or_default()
                .insert((*doc).to_owned(), grade);
        }
    }
    Ok(judged)
}

impl Collection {
    /// The set unpacked in `dir`: `corpus.jsonl` (or NFCorpus's `corpus/human.jsonl`; the
    /// LLM rewrite beside it is not read), `queries.jsonl`, `qrels/test.tsv`.
    pub fn load(dir: &Path) -> anyhow::Result<Self> {
        let corpus = first_of(dir, &["corpus.jsonl", "corpus/human.jsonl"])?;
        let judgements = judgements(&first_of(dir, &["qrels/test.tsv", "qrels.tsv"])?)?;
        let documents = jsonl(&corpus)?
            .iter()
            .map(|doc| Document {
                id: text(doc, "_id"),
                title: text(doc, "title"),
                text: text(doc, "text"),
            })
            .collect();
        let queries: Vec<(String, String)> = jsonl(&dir.join("queries.jsonl"))?
            .iter()
            .map(|query| (text(query, "_id"), text(query, "text")))
            .filter(|(id, _)| judgements.contains_key(id))
            .collect();
        if queries.is_empty() {
            bail!("no judged queries under {}", dir.display());
        }
        let name = (dir.file_name())
            .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into());
        Ok(Self {
            name,
            documents,
            queries,
            judgements,
        })
    }
}

/// nDCG@10 with graded gains, as trec_eval's `ndcg_cut.10`: each retrieved document gains
/// its grade discounted by log2(rank + 1); the ideal ranking is every judged document of
/// the query, best grades first.
pub fn ndcg_at_10(ranked: &[String], judged: &HashMap<String, u32>) -> f64 {
    let discount = |rank: usize| 1.0 / (rank as f64 + 2.0).log2();
    let dcg: f64 = (ranked.iter().take(10).enumerate())
        .map(|(rank, doc)| f64::from(judged.get(doc).copied().unwrap_or(0)) * discount(rank))
        .sum();
    let mut grades: Vec<u32> = judged.values().copied().collect();
    grades.sort_unstable_by(|a, b| b.cmp(a));
    let ideal: f64 = (grades.iter().take(10).enumerate())
        .map(|(rank, &grade)| f64::from(grade) * discount(rank))
        .sum();
    if ideal == 0.0 { 0.0 } else { dcg / ideal }
}

/// Recall at `cutoff`, as trec_eval's `recall.N`: relevant documents among the first
/// `cutoff` retrieved, over the relevant (grade > 0) documents judged.
pub fn recall(ranked: &[String], judged: &HashMap<String, u32>, cutoff: usize) -> f64 {
    let found = (ranked.iter().take(cutoff))
        .filter(|doc| judged.contains_key(*doc))
        .count();
    found as f64 / judged.len().max(1) as f64
}

/// The nearest-rank percentile of some durations, in milliseconds.
pub fn percentile(times: &[Duration], share: f64) -> f64 {
    if times.is_empty() {
        return 0.0;
    }
    let mut sorted = times.to_vec();
    sorted.sort();
    let rank = ((share * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1].as_secs_f64() * 1000.0
}
