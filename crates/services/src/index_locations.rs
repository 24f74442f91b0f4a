//! Where each generation of the vector index lives (decision 0052): generation 0 where the
//! settings say, later ones beside it under names of their own.

use std::path::{Path, PathBuf};

/// The folder of generation `number` of the embedded index: `base` itself for generation 0
/// (the index of before generations), else a sibling named after it.
pub(crate) fn dir_of_generation(base: &Path, number: u32) -> PathBuf {
    if number == 0 {
        return base.to_path_buf();
    }
    let name = base
        .file_name()
        .map_or_else(|| "vectors".into(), |name| name.to_string_lossy());
    base.with_file_name(format!("{name}.generation-{number}"))
}

/// The Qdrant collection of generation `number`: `base` for generation 0, else named after
/// it.
pub(crate) fn collection_of_generation(base: &str, number: u32) -> String {
    if number == 0 {
        base.to_owned()
    } else {
        format!("{base}-generation-{number}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_zero_is_the_configured_place_and_later_ones_are_named_beside_it() {
        let base = Path::new("/srv/tessera/vectors");
        assert_eq!(dir_of_generation(base, 0), base);
        assert_eq!(
            dir_of_generation(base, 2),
            Path::new("/srv/tessera/vectors.generation-2")
        );
        assert_eq!(collection_of_generation("tessera", 0), "tessera");
        assert_eq!(
            collection_of_generation("tessera", 1),
            "tessera-generation-1"
        );
    }
}
