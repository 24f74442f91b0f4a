//! The deployment files parse, and the probes they declare point at endpoints this build
//! actually serves.

use std::path::PathBuf;

fn deploy_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy")
}

fn documents(path: &std::path::Path) -> Vec<serde_yaml::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml::Deserializer::from_str(&text)
        .map(|doc| {
            serde::Deserialize::deserialize(doc)
                .unwrap_or_else(|e| panic!("{} is not valid YAML: {e}", path.display()))
        })
        .collect()
}

#[test]
fn compose_file_runs_api_with_its_dependencies() {
    let compose = &documents(&deploy_dir().join("compose.yaml"))[0];
    let services = compose["services"].as_mapping().unwrap();
    for name in ["api", "postgres", "qdrant", "redis"] {
        assert!(services.contains_key(name), "compose declares {name}");
    }
    let environment = &compose["services"]["api"]["environment"];
    assert!(
        environment["DATABASE_URL"]
            .as_str()
            .unwrap()
            .starts_with("postgres://")
    );
    assert!(environment["TESSERA_LISTEN"].as_str().is_some());
}

#[test]
fn kubernetes_probes_target_served_health_endpoints() {
    let openapi = serde_json::to_value(tessera_api::startup::openapi()).unwrap();
    let mut kinds = Vec::new();
    for entry in std::fs::read_dir(deploy_dir().join("kubernetes")).unwrap() {
        let path = entry.unwrap().path();
        for doc in documents(&path) {
            let kind = doc["kind"]
                .as_str()
                .unwrap_or_else(|| panic!("{} has a document without kind", path.display()))
                .to_owned();
            assert!(
                doc["apiVersion"].is_string() && doc["metadata"]["name"].is_string(),
                "{}: {kind}",
                path.display()
            );
            if kind == "Deployment" {
                let container = &doc["spec"]["template"]["spec"]["containers"][0];
                for (probe, expected) in [
                    ("livenessProbe", "/v1/health"),
                    ("readinessProbe", "/v1/health/ready"),
                ] {
                    let get = &container[probe]["httpGet"];
                    assert_eq!(get["path"].as_str(), Some(expected), "{probe}");
                    assert_eq!(get["scheme"].as_str(), Some("HTTPS"), "{probe} uses HTTPS");
                    assert!(
                        openapi["paths"][expected]["get"].is_object(),
                        "{expected} is served"
                    );
                }
                assert_eq!(
                    doc["spec"]["template"]["spec"]["enableServiceLinks"].as_bool(),
                    Some(false),
                    "service links would inject unknown TESSERA_* variables"
                );
            }
            kinds.push(kind);
        }
    }
    for expected in ["Deployment", "Service", "ConfigMap", "Secret"] {
        assert!(
            kinds.iter().any(|k| k == expected),
            "manifests include a {expected}"
        );
    }
}

/// The image carries the same model packages `just models` fetches, where the service's
/// models folder points, so a container answers on the embedded model and embeds uploads.
#[test]
fn the_image_carries_the_local_models() {
    let dockerfile = std::fs::read_to_string(deploy_dir().join("Dockerfile")).unwrap();
    let justfile = std::fs::read_to_string(deploy_dir().join("../justfile")).unwrap();
    let fetched = justfile
        .lines()
        .find_map(|line| line.trim().strip_prefix("for package in "))
        .and_then(|rest| rest.strip_suffix("; do"))
        .expect("the justfile's models recipe lists its packages");
    for package in fetched.split_whitespace() {
        assert!(
            dockerfile.contains(&format!(" {package}")),
            "the Dockerfile does not fetch {package}"
        );
    }
    assert!(dockerfile.contains("COPY --from=models /models /usr/share/tessera/models"));
    assert!(dockerfile.contains("TESSERA_MODELS__LOCAL_DIR=/usr/share/tessera/models"));
}
