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

// ---- Prometheus metrics: the dashboard, the scrape configuration and the manifests ----

/// The port every deployment file expects the metrics listener on.
const METRICS_PORT: u16 = 9464;

fn repo_file(relative: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The metrics the service declares, read as text from
/// `crates/metrics-prometheus/src/names.rs` (and any store constant it refers to), so that
/// renaming a metric there breaks the dashboard check instead of leaving a panel that shows
/// nothing.
struct Declared {
    /// Every exported name (`tessera_chat_completions_total`, `gen_ai_client_token_usage`...).
    names: std::collections::BTreeSet<String>,
    /// Those that are histograms (exported as `_bucket`, `_sum` and `_count` series).
    histograms: std::collections::BTreeSet<String>,
}

/// `pub const NAME: TYPE = VALUE;` statements of a Rust file, comments left out.
fn constants(source: &str) -> Vec<(String, String, String)> {
    let code: String = source
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    code.split("pub const ")
        .skip(1)
        .map(|statement| {
            let statement = statement.split(';').next().unwrap();
            let (name, rest) = statement.split_once(':').unwrap();
            let (ty, value) = rest.split_once('=').unwrap();
            (
                name.trim().to_owned(),
                ty.trim().to_owned(),
                value.trim().to_owned(),
            )
        })
        .collect()
}

fn string_literal(value: &str) -> Option<String> {
    value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .map(str::to_owned)
}

fn declared_metrics() -> Declared {
    let store: std::collections::BTreeMap<String, String> =
        constants(&repo_file("crates/store/src/metrics.rs"))
            .into_iter()
            .filter(|(_, ty, _)| ty == "&str")
            .filter_map(|(name, _, value)| Some((name, string_literal(&value)?)))
            .collect();
    // The text read agrees with the constant the store compiles.
    assert_eq!(
        store.get("CONNECTION_WAIT_TIME").map(String::as_str),
        Some(tessera_store::CONNECTION_WAIT_TIME)
    );
    let mut by_constant = std::collections::BTreeMap::new();
    let mut histogram_constants = Vec::new();
    for (name, ty, value) in constants(&repo_file("crates/metrics-prometheus/src/names.rs")) {
        if ty == "&str" {
            let metric = string_literal(&value)
                .or_else(|| {
                    let referred = value.strip_prefix("tessera_store::")?;
                    store.get(referred).cloned()
                })
                .unwrap_or_else(|| panic!("names.rs: cannot read the value of {name}: {value}"));
            by_constant.insert(name, metric);
        } else if name == "HISTOGRAMS" {
            // `&[(HTTP_REQUEST_DURATION, HTTP_BUCKETS), ...]`: the first of each pair.
            histogram_constants = value
                .split('(')
                .skip(1)
                .map(|pair| pair.split(',').next().unwrap().trim().to_owned())
                .collect();
        }
    }
    assert!(
        by_constant.len() >= 20,
        "names.rs declares {} metrics: the parse is off",
        by_constant.len()
    );
    assert!(
        !histogram_constants.is_empty(),
        "names.rs lists its HISTOGRAMS"
    );
    let histograms = histogram_constants
        .iter()
        .map(|constant| {
            by_constant
                .get(constant)
                .unwrap_or_else(|| panic!("HISTOGRAMS names {constant}, not a metric constant"))
                .clone()
        })
        .collect();
    for metric in by_constant.values() {
        assert!(
            metric
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !metric.starts_with(|c: char| c.is_ascii_digit()),
            "{metric} is not a Prometheus metric name"
        );
    }
    Declared {
        names: by_constant.into_values().collect(),
        histograms,
    }
}

/// The metric names a PromQL expression selects: identifiers that are neither functions,
/// keywords, label names (in `{...}` matchers and `by (...)` lists), durations, numbers nor
/// Grafana variables.
fn promql_metrics(expr: &str) -> Vec<String> {
    const LABEL_LISTS: &[&str] = &[
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
    ];
    const KEYWORDS: &[&str] = &["and", "or", "unless", "bool", "offset", "inf", "nan"];
    let chars: Vec<char> = expr.chars().collect();
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    // Skips from an opening delimiter to just past its closing one, past quoted strings.
    let skip_to = |mut i: usize, close: char| {
        i += 1;
        while i < chars.len() && chars[i] != close {
            if matches!(chars[i], '"' | '\'' | '`') {
                let quote = chars[i];
                i += 1;
                while i < chars.len() && chars[i] != quote {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
            }
            i += 1;
        }
        i + 1
    };
    let mut metrics = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '{' {
            i = skip_to(i, '}');
        } else if c == '[' {
            i = skip_to(i, ']');
        } else if matches!(c, '"' | '\'' | '`') {
            i = skip_to(i, c) - 1;
        } else if c == '$'
            || c.is_ascii_digit()
            || (c == '.' && i + 1 < chars.len() && chars[i + 1].is_ascii_digit())
        {
            // A Grafana variable, a number or a duration.
            i += 1;
            while i < chars.len() && (ident(chars[i]) || chars[i] == '.') {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < chars.len() && ident(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let mut next = i;
            while next < chars.len() && chars[next].is_whitespace() {
                next += 1;
            }
            let rest: String = chars[next..].iter().collect();
            // A function's call, or an aggregation whose grouping comes first
            // (`sum by (le) (...)`).
            let call = rest.starts_with('(')
                || ["by", "without"].iter().any(|grouping| {
                    rest.strip_prefix(grouping)
                        .is_some_and(|after| after.trim_start().starts_with('('))
                });
            let lower = word.to_ascii_lowercase();
            if LABEL_LISTS.contains(&lower.as_str()) {
                if call {
                    i = skip_to(next, ')');
                }
            } else if !call && !KEYWORDS.contains(&lower.as_str()) {
                metrics.push(word);
            }
        } else {
            i += 1;
        }
    }
    metrics
}

#[test]
fn promql_metrics_reads_the_selected_series() {
    assert_eq!(
        promql_metrics(
            r#"histogram_quantile(0.95, sum by (le, http_route) (rate(http_server_request_duration_seconds_bucket{job=~"$job", http_response_status_code=~"5.."}[5m])))"#
        ),
        ["http_server_request_duration_seconds_bucket"]
    );
    assert_eq!(
        promql_metrics(
            "sum(rate(a_total[5m] offset 1h)) by (reason) / on (reason) group_left b_count > bool 0.5e1"
        ),
        ["a_total", "b_count"]
    );
}

fn dashboard() -> serde_json::Value {
    let text = std::fs::read_to_string(deploy_dir().join("grafana/tessera.json")).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("grafana/tessera.json: {e}"))
}

/// The dashboard's panels, those in collapsed rows included; rows themselves left out.
fn dashboard_panels(dashboard: &serde_json::Value) -> Vec<&serde_json::Value> {
    let mut panels = Vec::new();
    for panel in dashboard["panels"]
        .as_array()
        .expect("the dashboard has panels")
    {
        if panel["type"] == "row" {
            panels.extend(panel["panels"].as_array().into_iter().flatten());
        } else {
            panels.push(panel);
        }
    }
    panels
}

/// Every PromQL expression of the dashboard (its panels' and its variables'), with where it
/// comes from.
fn dashboard_expressions(dashboard: &serde_json::Value) -> Vec<(String, String)> {
    let mut expressions = Vec::new();
    for panel in dashboard_panels(dashboard) {
        let title = panel["title"].as_str().unwrap_or_default();
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().unwrap_or_default();
            expressions.push((format!("panel \"{title}\""), expr.to_owned()));
        }
    }
    for variable in dashboard["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if variable["type"] != "query" {
            continue;
        }
        let query = variable["query"]["query"]
            .as_str()
            .or_else(|| variable["query"].as_str())
            .unwrap_or_default();
        // `label_values(metric, label)`: the series is the first argument.
        let series = query
            .strip_prefix("label_values(")
            .map(|args| args.split([',', ')']).next().unwrap())
            .unwrap_or(query);
        let name = variable["name"].as_str().unwrap_or_default();
        expressions.push((format!("variable {name}"), series.trim().to_owned()));
    }
    expressions
}

/// Every metric the dashboard queries is one the service exports, spelled as it is exported:
/// a histogram through its `_bucket`, `_sum` or `_count` series, anything else by its name.
#[test]
fn dashboard_queries_only_declared_metrics() {
    let declared = declared_metrics();
    let dashboard = dashboard();
    assert!(dashboard["title"].is_string() && dashboard["uid"].is_string());
    assert!(
        dashboard["schemaVersion"].as_u64().is_some_and(|v| v >= 36),
        "an importable schemaVersion"
    );
    // The data source is a variable (or an import input), so the JSON imports anywhere.
    let mut data_sources: Vec<&str> = dashboard["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|variable| variable["type"] == "datasource")
        .filter_map(|variable| variable["name"].as_str())
        .collect();
    data_sources.extend(
        dashboard["__inputs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|input| input["name"].as_str()),
    );
    let panels = dashboard_panels(&dashboard);
    assert!(panels.len() >= 20, "{} panels", panels.len());
    let mut ids = std::collections::BTreeSet::new();
    for panel in &panels {
        let title = panel["title"].as_str().unwrap_or_default();
        assert!(!title.is_empty(), "a panel without a title: {panel}");
        assert!(
            ids.insert(panel["id"].as_u64()),
            "panel id of \"{title}\" is taken"
        );
        let uid = panel["datasource"]["uid"].as_str().unwrap_or_default();
        assert!(
            uid.strip_prefix("${")
                .and_then(|v| v.strip_suffix('}'))
                .is_some_and(|name| data_sources.contains(&name)),
            "panel \"{title}\": data source {uid} is not the dashboard's variable"
        );
        let targets = panel["targets"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        assert!(!targets.is_empty(), "panel \"{title}\" has no query");
        for target in targets {
            let expr = target["expr"].as_str().unwrap_or_default();
            assert!(
                !expr.trim().is_empty(),
                "panel \"{title}\" has an empty expression"
            );
        }
    }
    for (place, expr) in dashboard_expressions(&dashboard) {
        let metrics = promql_metrics(&expr);
        assert!(!metrics.is_empty(), "{place}: no metric in `{expr}`");
        for metric in metrics {
            // Prometheus's own series for each target.
            if metric == "up" {
                continue;
            }
            let histogram = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|suffix| metric.strip_suffix(suffix))
                .filter(|base| declared.histograms.contains(*base));
            match histogram {
                Some(_) => {}
                None => assert!(
                    declared.names.contains(&metric) && !declared.histograms.contains(&metric),
                    "{place}: `{metric}` is not a metric the service exports (names.rs); \
                     exported: {:?}",
                    declared.names
                ),
            }
            if metric.ends_with("_bucket") {
                assert!(
                    expr.contains("histogram_quantile(") && expr.contains("by (le"),
                    "{place}: buckets are read with histogram_quantile over `sum by (le, ...)`"
                );
            }
        }
    }
}

/// A metric added to names.rs gets a panel.
#[test]
fn dashboard_charts_every_declared_metric() {
    let declared = declared_metrics();
    let dashboard = dashboard();
    let queried: std::collections::BTreeSet<String> = dashboard_expressions(&dashboard)
        .iter()
        .flat_map(|(_, expr)| promql_metrics(expr))
        .map(|metric| {
            ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|suffix| metric.strip_suffix(suffix))
                .filter(|base| declared.histograms.contains(*base))
                .map_or(metric.clone(), str::to_owned)
        })
        .collect();
    let missing: Vec<_> = declared.names.difference(&queried).collect();
    assert!(missing.is_empty(), "no panel shows {missing:?}");
}

/// The port a metrics address (`host:port`) or scrape target names.
fn port_of(address: &str) -> Option<u16> {
    address.rsplit_once(':')?.1.parse().ok()
}

/// `TESSERA_METRICS__LISTEN` as the strict configuration loader reads it.
fn metrics_address_from_env(value: &str) -> std::net::SocketAddr {
    let settings = tessera_api::config::Settings::load_from(
        None,
        [("TESSERA_METRICS__LISTEN".to_owned(), value.to_owned())],
    )
    .unwrap_or_else(|e| panic!("TESSERA_METRICS__LISTEN={value}: {e}"));
    settings.metrics.address().expect("metrics are on")
}

#[test]
fn prometheus_scrapes_the_metrics_listener() {
    let config = &documents(&deploy_dir().join("prometheus/prometheus.yml"))[0];
    assert_eq!(config["global"]["scrape_interval"].as_str(), Some("15s"));
    let compose = &documents(&deploy_dir().join("compose.yaml"))[0];
    let jobs = config["scrape_configs"]
        .as_sequence()
        .expect("scrape_configs");
    let mut names = Vec::new();
    for job in jobs {
        let name = job["job_name"].as_str().expect("job_name").to_owned();
        assert!(
            job["metrics_path"].is_null() || job["metrics_path"].as_str() == Some("/metrics"),
            "{name} scrapes /metrics"
        );
        assert!(
            job["scheme"].is_null() || job["scheme"].as_str() == Some("http"),
            "{name}: the metrics listener is plain HTTP"
        );
        let targets: Vec<&str> = job["static_configs"]
            .as_sequence()
            .into_iter()
            .flatten()
            .flat_map(|group| group["targets"].as_sequence().into_iter().flatten())
            .map(|target| target.as_str().expect("a target is host:port"))
            .collect();
        for target in &targets {
            assert_eq!(port_of(target), Some(METRICS_PORT), "{name}: {target}");
            // Static targets are the compose file's services.
            let host = target.rsplit_once(':').unwrap().0;
            assert!(
                compose["services"][host].is_mapping(),
                "{name}: {target} is not a service of compose.yaml"
            );
        }
        if name == "tessera-api" {
            assert!(!targets.is_empty(), "the API replicas are scraped");
        }
        names.push(name);
    }
    for expected in ["tessera-api", "tessera-worker"] {
        assert!(names.iter().any(|n| n == expected), "a {expected} job");
    }
    // The port is the service's default one, so a process started without the setting
    // still listens where the deployment files look (on loopback).
    let default = tessera_api::config::MetricsSettings::default();
    assert_eq!(port_of(&default.listen), Some(METRICS_PORT));
}

#[test]
fn compose_runs_prometheus_and_grafana_on_request() {
    let compose = &documents(&deploy_dir().join("compose.yaml"))[0];
    let services = &compose["services"];
    let api = &services["api"];
    let listen = api["environment"]["TESSERA_METRICS__LISTEN"]
        .as_str()
        .expect("the api service turns the metrics listener to the network");
    let address = metrics_address_from_env(listen);
    assert!(
        address.ip().is_unspecified(),
        "reachable by the prometheus service"
    );
    assert_eq!(address.port(), METRICS_PORT);
    // The metrics port is published to the host on loopback at most.
    for published in api["ports"].as_sequence().into_iter().flatten() {
        let published = published
            .as_str()
            .expect("ports are \"[ip:]host:container\"");
        if port_of(published) == Some(METRICS_PORT) {
            assert!(published.starts_with("127.0.0.1:"), "{published}");
        }
    }
    for name in ["api", "postgres", "qdrant", "redis"] {
        assert!(
            services[name]["profiles"].is_null(),
            "{name} runs without a profile"
        );
    }
    let mut mounts = std::collections::BTreeMap::new();
    for name in ["prometheus", "grafana"] {
        let service = &services[name];
        let profiles: Vec<_> = service["profiles"]
            .as_sequence()
            .into_iter()
            .flatten()
            .collect();
        assert_eq!(
            profiles,
            [&serde_yaml::Value::from("observability")],
            "{name}"
        );
        for volume in service["volumes"].as_sequence().into_iter().flatten() {
            let volume = volume.as_str().unwrap();
            let mut parts = volume.split(':');
            let (source, target) = (parts.next().unwrap(), parts.next().unwrap());
            if let Some(relative) = source.strip_prefix("./") {
                assert!(
                    deploy_dir().join(relative).exists(),
                    "{name} mounts {source}, which is missing"
                );
                mounts.insert(relative.to_owned(), target.to_owned());
            }
        }
    }
    assert_eq!(
        mounts.get("prometheus/prometheus.yml").map(String::as_str),
        Some("/etc/prometheus/prometheus.yml")
    );
    // Grafana's provisioning finds the mounted dashboard and the prometheus service.
    let dashboard_in_container = mounts
        .get("grafana/tessera.json")
        .expect("grafana mounts the dashboard");
    for provisioning in ["datasources", "dashboards"] {
        assert_eq!(
            mounts.get(&format!("grafana/provisioning/{provisioning}")),
            Some(&format!("/etc/grafana/provisioning/{provisioning}")),
            "grafana mounts its {provisioning} provisioning"
        );
    }
    let providers =
        &documents(&deploy_dir().join("grafana/provisioning/dashboards/tessera.yaml"))[0];
    let path = providers["providers"][0]["options"]["path"]
        .as_str()
        .unwrap();
    assert!(
        dashboard_in_container.starts_with(&format!("{}/", path.trim_end_matches('/'))),
        "the provider reads {path}, the dashboard is at {dashboard_in_container}"
    );
    let sources =
        &documents(&deploy_dir().join("grafana/provisioning/datasources/prometheus.yaml"))[0];
    let source = &sources["datasources"][0];
    assert_eq!(source["type"].as_str(), Some("prometheus"));
    assert_eq!(
        source["isDefault"].as_bool(),
        Some(true),
        "the dashboard's variable picks it"
    );
    let url = source["url"].as_str().unwrap();
    let host = url
        .strip_prefix("http://")
        .and_then(|rest| rest.split(':').next())
        .unwrap();
    assert!(services[host].is_mapping(), "{url} is a compose service");
}

#[test]
fn kubernetes_exposes_metrics_to_prometheus() {
    let mut by_kind: std::collections::BTreeMap<String, Vec<serde_yaml::Value>> =
        std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(deploy_dir().join("kubernetes")).unwrap() {
        for doc in documents(&entry.unwrap().path()) {
            let kind = doc["kind"].as_str().unwrap().to_owned();
            by_kind.entry(kind).or_default().push(doc);
        }
    }
    let one = |kind: &str| -> &serde_yaml::Value {
        let docs = by_kind.get(kind).unwrap_or_else(|| panic!("no {kind}"));
        assert_eq!(docs.len(), 1, "one {kind}");
        &docs[0]
    };
    let config_map = one("ConfigMap");
    let listen = config_map["data"]["TESSERA_METRICS__LISTEN"]
        .as_str()
        .expect("the ConfigMap sets TESSERA_METRICS__LISTEN");
    let address = metrics_address_from_env(listen);
    assert!(
        address.ip().is_unspecified(),
        "reachable from the scraper, not loopback only"
    );
    assert_eq!(address.port(), METRICS_PORT);

    let deployment = one("Deployment");
    let pod = &deployment["spec"]["template"];
    let container = &pod["spec"]["containers"][0];
    assert!(
        container["envFrom"]
            .as_sequence()
            .into_iter()
            .flatten()
            .any(|from| from["configMapRef"]["name"] == config_map["metadata"]["name"]),
        "the container reads the ConfigMap"
    );
    let metrics_port = container["ports"]
        .as_sequence()
        .into_iter()
        .flatten()
        .find(|port| port["name"].as_str() == Some("metrics"))
        .expect("the container declares a metrics port");
    assert_eq!(
        metrics_port["containerPort"].as_u64(),
        Some(u64::from(address.port()))
    );
    let annotations = &pod["metadata"]["annotations"];
    assert_eq!(annotations["prometheus.io/scrape"].as_str(), Some("true"));
    assert_eq!(
        annotations["prometheus.io/port"].as_str(),
        Some(address.port().to_string().as_str())
    );
    assert_eq!(annotations["prometheus.io/path"].as_str(), Some("/metrics"));

    let service = one("Service");
    for (label, value) in service["spec"]["selector"].as_mapping().unwrap() {
        assert_eq!(
            &pod["metadata"]["labels"][label], value,
            "the Service selects the pods"
        );
    }
    let service_ports = service["spec"]["ports"].as_sequence().unwrap();
    let service_metrics = service_ports
        .iter()
        .find(|port| port["name"].as_str() == Some("metrics"))
        .expect("the Service exposes a metrics port");
    let target = &service_metrics["targetPort"];
    assert!(
        target.as_str() == Some("metrics") || target.as_u64() == Some(u64::from(METRICS_PORT)),
        "the Service's metrics port leads to the container's: {target:?}"
    );

    let monitor = one("ServiceMonitor");
    assert_eq!(
        monitor["apiVersion"].as_str(),
        Some("monitoring.coreos.com/v1")
    );
    let selector = monitor["spec"]["selector"]["matchLabels"]
        .as_mapping()
        .unwrap();
    assert!(!selector.is_empty());
    for (label, value) in selector {
        assert_eq!(
            &service["metadata"]["labels"][label], value,
            "the ServiceMonitor selects the Service"
        );
    }
    let endpoints = monitor["spec"]["endpoints"].as_sequence().unwrap();
    assert!(!endpoints.is_empty());
    for endpoint in endpoints {
        let port = endpoint["port"]
            .as_str()
            .expect("endpoints name their port");
        assert!(
            service_ports
                .iter()
                .any(|p| p["name"].as_str() == Some(port)),
            "the ServiceMonitor's port {port} is not a port of the Service"
        );
        assert_eq!(endpoint["path"].as_str(), Some("/metrics"));
        assert_eq!(endpoint["interval"].as_str(), Some("15s"));
    }
}
