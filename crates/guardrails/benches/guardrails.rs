//! What guardrails cost on a ~2,000-token request (issue 66: at most 2 ms at p99): a
//! support conversation of about 8,000 characters (prose, a log excerpt, a config snippet)
//! with a few PII values sprinkled in, checked against a policy with every rule on: all 14
//! PII kinds (emails and phone numbers pseudonymised, the rest redacted, so every finding
//! is transformed and nothing stops the check early), a deny list of 60 words and 3
//! patterns, an allow list, and a size limit. The hook is I/O and not measured.
//!
//! Rows, each timed over `BENCH_ITERATIONS` runs (default 10,000) after a warm-up:
//! - the baselines, measured in the same run: `str::contains` of an absent word (one pass
//!   of the fastest substring search over the text) and `chars().count()` (one pass
//!   decoding every character, which the size limit needs anyway);
//! - the input check (`GuardedRequest::check_input`: size, detectors, deny and allow lists,
//!   masks and placeholders, a fresh vault and record each time);
//! - the output check of the finished answer (`check_output`: output rules and restoring the
//!   placeholders) and the streaming restorer over 4-character deltas;
//! - each PII detector alone on the same text, to see where the time goes.
//!
//! The CPU flags and model it ran on are printed first; figures are µs per run and ratios
//! against the `str::contains` baseline. `BENCH_SHOW_TEXT=1` also prints the checked text.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::{hint::black_box, time::Instant};

use tessera_guardrails::{
    GuardrailPolicy, Guardrails, PiiKind, PolicySpec, StreamRestorer, detect,
};
use tessera_kernel::TargetPolicy;

const WARM_UP: usize = 500;

fn main() {
    let iterations: usize = std::env::var("BENCH_ITERATIONS")
        .ok()
        .map(|n| n.parse().expect("BENCH_ITERATIONS must be a number"))
        .unwrap_or(10_000);
    let text = request_text();
    let policy = policy();
    let guardrails = Guardrails::without_hook();

    println!("\nGuardrails on a ~2,000-token request (issue 66: ≤ 2 ms at p99)\n");
    println!("CPU: {}", cpu_model());
    println!("CPU flags: {}", cpu_flags());
    println!(
        "request: {} characters, {} bytes, ~{} tokens (characters / 4); {iterations} runs per row\n",
        text.chars().count(),
        text.len(),
        text.chars().count() / 4
    );

    // What the input check makes of the text, shown once (and checked: every value masked).
    let mut guard = guardrails.begin(policy.clone());
    let sent = guard.check_input(&text).unwrap().into_owned();
    for value in SPRINKLED {
        assert!(!sent.contains(value), "{value} reached the provider");
    }
    if std::env::var_os("BENCH_SHOW_TEXT").is_some() {
        println!("what the provider sees:\n{sent}\n");
    }
    let answer = answer_text(&sent);
    let restored = guard.check_output(&answer).unwrap().into_owned();
    assert!(restored.contains("jane.doe@example.com"));
    let outcomes: Vec<String> = guard
        .record()
        .outcomes()
        .iter()
        .map(|o| format!("{} {} ×{}", o.rule, o.effect.as_str(), o.count))
        .collect();
    println!("decisions on this request: {}\n", outcomes.join(", "));

    let contains = measure(iterations, || black_box(&text).contains("zebra-unicorn"));
    let count = measure(iterations, || black_box(&text).chars().count());
    let input = measure(iterations, || {
        let mut guard = guardrails.begin(policy.clone());
        guard.check_input(black_box(&text)).unwrap().len()
    });
    // The same request with a German greeting: Unicode word boundaries in the deny list's
    // words cannot run on the fastest engine over non-ASCII text.
    let accented = format!("Grüße aus München, liebe Kolleginnen und Kollegen!\n\n{text}");
    let input_accented = measure(iterations, || {
        let mut guard = guardrails.begin(policy.clone());
        guard.check_input(black_box(&accented)).unwrap().len()
    });
    let output = measure(iterations, || {
        let mut guard = guardrails.begin(policy.clone());
        guard.check_input(&text).unwrap();
        guard.check_output(black_box(&answer)).unwrap().len()
    });
    let deltas: Vec<&str> = split_deltas(&answer, 4);
    let vault = guard.pseudonyms().clone();
    let streaming = measure(iterations, || {
        let mut restorer = StreamRestorer::new(vault.clone());
        let mut sent = 0;
        for delta in &deltas {
            sent += restorer.push(black_box(delta)).len();
        }
        sent + restorer.finish().len()
    });

    let base = contains.p50;
    println!("| run | p50 µs | p99 µs | p50 × contains |");
    println!("|:----|-------:|-------:|---------------:|");
    let row = |name: &str, timing: &Timing| {
        println!(
            "| {name} | {:.1} | {:.1} | {:.1} |",
            timing.p50,
            timing.p99,
            timing.p50 / base
        );
    };
    row("baseline: `str::contains` (absent word)", &contains);
    row("baseline: `chars().count()`", &count);
    row("input check (every rule)", &input);
    row("input check, non-ASCII text", &input_accented);
    row(
        "input check + output check of the answer (restore)",
        &output,
    );
    row(
        &format!("streaming restore ({} deltas)", deltas.len()),
        &streaming,
    );
    for kind in PiiKind::ALL {
        let alone = measure(iterations / 4, || {
            detect::find(kind, black_box(&text)).len()
        });
        row(&format!("detector `{kind}` alone"), &alone);
    }
    println!(
        "\ngoal: input check p99 ≤ 2000 µs: {} ({:.1} µs)",
        if input.p99 <= 2000.0 {
            "met"
        } else {
            "NOT met"
        },
        input.p99
    );
}

struct Timing {
    p50: f64,
    p99: f64,
}

/// Times `iterations` calls after the warm-up; microseconds each.
fn measure<T>(iterations: usize, mut run: impl FnMut() -> T) -> Timing {
    let mut times = Vec::with_capacity(iterations);
    for i in 0..WARM_UP + iterations {
        let started = Instant::now();
        black_box(run());
        if i >= WARM_UP {
            times.push(started.elapsed().as_secs_f64() * 1e6);
        }
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    Timing {
        p50: at(0.5),
        p99: at(0.99),
    }
}

/// The PII values in the request; none may reach the provider.
const SPRINKLED: [&str; 9] = [
    "jane.doe@example.com",
    "+44 20 7946 0958",
    "4111 1111 1111 1111",
    "DE89 3704 0044 0532 0130 00",
    "203.0.113.42",
    "sk-proj-Zx8Qw2Lm9Pk4Rt7Vb3NcYd6Hf1Ja5Gs0",
    "536-90-4399",
    "AB 12 34 56 C",
    "ops@acme-corp.example",
];

/// A support conversation of about 8,000 characters.
fn request_text() -> String {
    let paragraphs = [
        "Hello, I am writing on behalf of our operations team (Project Falcon) about the outage we had last \
         Tuesday between 14:05 and 15:40 UTC. Our dashboards showed elevated error rates on \
         the checkout service (about 12% of requests failed with 502 or 504), and customers \
         reported that payments were charged twice in some cases. We need to understand \
         what happened, whether any data was exposed, and what you recommend we change.",
        "You can reach me at jane.doe@example.com or on +44 20 7946 0958 during office hours. \
         For urgent matters our on-call rotation is reachable through ops@acme-corp.example, \
         which forwards to whoever holds the pager this week (cc support@tessera.dev).",
        "Here is an excerpt of the gateway log from the incident window. The upstream \
         addresses are internal, the client address is one of our test machines:\n\
         2024-05-14T14:05:12Z WARN upstream=10.20.30.40:8443 client=203.0.113.42 status=502 latency_ms=30001\n\
         2024-05-14T14:05:13Z WARN upstream=10.20.30.41:8443 client=203.0.113.42 status=504 latency_ms=30000\n\
         2024-05-14T14:05:15Z INFO retry=2 route=/v2/checkout/confirm version=3.14.2 build=20240513.7\n\
         2024-05-14T14:06:02Z ERROR pool exhausted (max=256, in_use=256, waiting=1431)",
        "One of our engineers pasted the following configuration into the ticket, which I \
         realise now should not have been shared in clear:\n\
         [payments]\nprovider = \"acme-pay\"\ntimeout_ms = 30000\nretries = 3\n\
         api_key = sk-proj-Zx8Qw2Lm9Pk4Rt7Vb3NcYd6Hf1Ja5Gs0\nregion = \"eu-west-1\"\n\
         Please make sure it is rotated on your side as well if it was ever logged.",
        "For the refund of the duplicate charges, the affected test card was \
         4111 1111 1111 1111 and the refunds should go to our account \
         DE89 3704 0044 0532 0130 00 (Acme Corp GmbH). The employee who ran the test is on \
         file with SSN 536-90-4399 and National Insurance number AB 12 34 56 C, in case your \
         compliance team needs to match the transaction to a person.",
        "Our architecture, briefly: requests enter through two load balancers, pass the API \
         gateway (version 3.14.2), and reach the checkout service, which calls the payment \
         provider with a 30 second timeout and up to three retries. The database is a \
         PostgreSQL 16 cluster with one primary and two replicas; connection pools are sized \
         at 256 per instance, and there are 8 instances in normal operation, 12 at peak. We \
         run the whole stack on Kubernetes 1.29 in two availability zones.",
        "What we observed: at 14:05 the payment provider started answering slowly (p99 went \
         from 800 ms to more than 30 seconds). Our retries tripled the load on it, the pools \
         filled up, and the checkout service stopped answering health checks, so the load \
         balancers took instances out of rotation one after another. At 14:20 we disabled \
         retries by hand, at 14:35 the provider recovered, and by 15:40 every instance was \
         healthy again. About 1,250 orders were affected; 37 were charged twice.",
        "Questions for you: should retries back off exponentially with jitter, and should \
         they be capped by a budget per minute rather than per request? Would a circuit \
         breaker in front of the provider have helped, and with which thresholds? Is it safe \
         to make the confirmation step idempotent with a key derived from the order id, or \
         do we need the provider's own idempotency keys? And how should our alerting have \
         caught the pool exhaustion earlier than the health checks did?",
    ];
    let mut text = String::new();
    // The conversation repeats its middle with small changes, as long threads do, until it
    // holds about 8,000 characters.
    let mut round = 0;
    while text.chars().count() < 7_600 {
        for (index, paragraph) in paragraphs.iter().enumerate() {
            if round > 0 && matches!(index, 1 | 3 | 4) {
                continue;
            }
            text.push_str(paragraph);
            text.push_str("\n\n");
        }
        round += 1;
        text.push_str(&format!(
            "Follow-up {round}: the numbers above are from the second region as well; the \
             first region saw about half as many errors. Ticket reference INC-2024-0514-{round:02}.\n\n"
        ));
    }
    text
}

/// The model's answer: it quotes the placeholders it was given and adds prose.
fn answer_text(sent: &str) -> String {
    let quoted: Vec<&str> = sent
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|word| word.contains('⟦'))
        .take(4)
        .collect();
    let mut answer = String::from(
        "Thank you for the detailed report. Here is what happened and what we recommend.\n\n",
    );
    for _ in 0..6 {
        answer.push_str(
            "Retries without a budget multiply the load on a slow dependency; use exponential \
             back-off with full jitter, cap retries per minute, and put a circuit breaker in \
             front of the provider that opens after a run of timeouts. Size the pools so that \
             a stalled dependency cannot take every connection, and alert on pool saturation \
             rather than on health checks. ",
        );
        answer.push_str(&format!(
            "We will reply to {} as soon as possible. ",
            quoted.join(" and ")
        ));
    }
    answer
}

/// `text` cut into deltas of about `chars` characters, as a stream delivers it.
fn split_deltas(text: &str, chars: usize) -> Vec<&str> {
    let boundaries: Vec<usize> = text
        .char_indices()
        .map(|(index, _)| index)
        .step_by(chars)
        .chain([text.len()])
        .collect();
    boundaries
        .windows(2)
        .map(|pair| &text[pair[0]..pair[1]])
        .collect()
}

/// Every rule on.
fn policy() -> GuardrailPolicy {
    let pii: Vec<serde_json::Value> = PiiKind::ALL
        .iter()
        .map(|kind| {
            let action = match kind {
                PiiKind::Email | PiiKind::Phone => "pseudonymise",
                _ => "redact",
            };
            serde_json::json!({"id": kind.as_str().replace('_', "-"), "kind": kind, "action": action})
        })
        .collect();
    let words: Vec<String> = (0..60).map(|i| format!("codename{i:02}")).collect();
    let spec: PolicySpec = serde_json::from_value(serde_json::json!({
        "pii": pii,
        "deny": [{
            "id": "codenames",
            "words": words,
            "patterns": ["(?i)project[- ]falcon", "\\bINC-\\d{4}-\\d{4}-99\\b", "(?i)do not (?:share|forward)"],
            "action": "redact"
        }],
        "allow": {"words": ["support@tessera.dev"], "patterns": ["[a-z]+@tessera\\.dev"]},
        "maxInputChars": 100_000
    }))
    .unwrap();
    GuardrailPolicy::new(spec, TargetPolicy::default(), &[]).unwrap()
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|line| line.strip_prefix("model name"))
                .map(|rest| rest.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_owned())
}

fn cpu_flags() -> String {
    #[cfg(target_arch = "x86_64")]
    {
        let flags = [
            ("sse4.2", std::arch::is_x86_feature_detected!("sse4.2")),
            ("avx2", std::arch::is_x86_feature_detected!("avx2")),
            ("avx512f", std::arch::is_x86_feature_detected!("avx512f")),
            ("avx512bw", std::arch::is_x86_feature_detected!("avx512bw")),
        ];
        flags
            .iter()
            .map(|(name, present)| format!("{name} {}", if *present { "yes" } else { "no" }))
            .collect::<Vec<_>>()
            .join(", ")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        format!("{} (no x86 flags)", std::env::consts::ARCH)
    }
}
