"""Self-test of check_layering.py on small synthetic `cargo metadata` documents.

Run: python3 -m unittest discover -s scripts -p 'test_*.py'
"""

from __future__ import annotations

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from check_layering import ROOT, RULES, check, load_rules  # noqa: E402

RULES_DOC = {
    "domains": {"crates": ["tessera-kernel", "tessera-models", "tessera-chats"]},
    "adapters": {"crates": ["tessera-store", "tessera-llm-http", "tessera-llm-openai", "tessera-auth"]},
    "apps": {"crates": ["tessera-api", "tessera-admin"]},
    "forbidden_in_domains": {"diesel": "storage belongs to tessera-store", "reqwest": "HTTP"},
    "allowed_adapter_edge": [
        {"from": "tessera-llm-openai", "to": "tessera-llm-http", "reason": "shared transport"},
    ],
    "allowed_app_edge": [
        {"from": "tessera-admin", "to": "tessera-api", "reason": "reuses its wiring"},
    ],
}

MEMBERS = [
    "tessera-kernel", "tessera-models", "tessera-chats", "tessera-store", "tessera-llm-http",
    "tessera-llm-openai", "tessera-auth", "tessera-api", "tessera-admin",
]

# A clean graph: domains on domains, adapters on domains and one allowed adapter edge, apps
# on everything (and admin on api).
CLEAN = {
    "tessera-kernel": ["serde"],
    "tessera-models": ["tessera-kernel", "futures"],
    "tessera-chats": ["tessera-models", "tessera-kernel"],
    "tessera-store": ["tessera-chats", "diesel"],
    "tessera-llm-http": ["tessera-models", "reqwest"],
    "tessera-llm-openai": ["tessera-llm-http", "tessera-models"],
    "tessera-auth": ["tessera-kernel"],
    "tessera-api": ["tessera-store", "tessera-llm-openai", "tessera-auth", "tessera-chats"],
    "tessera-admin": ["tessera-api", "tessera-store"],
    "serde": [],
    "futures": [],
    "diesel": ["libsqlite3-sys"],
    "libsqlite3-sys": [],
    "reqwest": ["hyper"],
    "hyper": [],
    "orm-helper": ["diesel"],
    "test-server": [],
}


def pid(name: str) -> str:
    return f"path+file:///ws#{name}@0.1.0"


def metadata(graph: dict[str, list], members: list[str] = MEMBERS) -> dict:
    """cargo metadata's shape: each edge is a name (normal) or (name, kind)."""
    nodes = []
    for name, deps in graph.items():
        entries = []
        for dep in deps:
            dep_name, kind = (dep, None) if isinstance(dep, str) else dep
            entries.append({
                "name": dep_name.replace("-", "_"),
                "pkg": pid(dep_name),
                "dep_kinds": [{"kind": kind, "target": None}],
            })
        nodes.append({"id": pid(name), "deps": entries, "dependencies": [e["pkg"] for e in entries]})
    return {
        "packages": [{"id": pid(n), "name": n} for n in graph],
        "workspace_members": [pid(n) for n in members],
        "resolve": {"nodes": nodes, "root": None},
    }


def with_edges(*edges: tuple, members: list[str] = MEMBERS) -> dict:
    graph = {k: list(v) for k, v in CLEAN.items()}
    for source, dep in edges:
        dep_name = dep if isinstance(dep, str) else dep[0]
        graph.setdefault(dep_name, [])
        graph.setdefault(source, []).append(dep)
    return metadata(graph, members)


class CheckLayering(unittest.TestCase):
    def violations(self, doc: dict, rules: dict = RULES_DOC) -> list[str]:
        errors, _ = check(doc, rules)
        return errors

    def test_clean_graph_passes(self):
        errors, summary = check(metadata(CLEAN), RULES_DOC)
        self.assertEqual(errors, [])
        self.assertIn("layering: ok", summary)

    def test_dev_only_edges_are_ignored(self):
        doc = with_edges(
            ("tessera-chats", ("diesel", "dev")),
            ("tessera-chats", ("tessera-store", "dev")),
            ("tessera-llm-openai", ("tessera-auth", "dev")),
        )
        self.assertEqual(self.violations(doc), [])

    def test_build_edges_count(self):
        doc = with_edges(("tessera-models", ("diesel", "build")))
        self.assertEqual(
            self.violations(doc),
            ["tessera-models → diesel: a domain crate may not depend on diesel (layering.toml)"],
        )

    def test_domain_to_diesel_directly(self):
        doc = with_edges(("tessera-chats", "diesel"))
        self.assertEqual(
            self.violations(doc),
            ["tessera-chats → diesel: a domain crate may not depend on diesel (layering.toml)"],
        )

    def test_domain_to_diesel_through_another_crate(self):
        doc = with_edges(("tessera-chats", "orm-helper"))
        self.assertEqual(
            self.violations(doc),
            ["tessera-chats → orm-helper → diesel: a domain crate may not depend on diesel "
             "(layering.toml)"],
        )

    def test_domain_to_diesel_through_another_domain_is_reported_once(self):
        doc = with_edges(("tessera-kernel", "orm-helper"))
        self.assertEqual(
            self.violations(doc),
            ["tessera-kernel → orm-helper → diesel: a domain crate may not depend on diesel "
             "(layering.toml)"],
        )

    def test_domain_to_adapter(self):
        doc = with_edges(("tessera-models", "tessera-llm-http"))
        self.assertEqual(
            self.violations(doc),
            ["tessera-models → tessera-llm-http: a domain crate may not depend on an adapter "
             "(tessera-llm-http) (layering.toml)"],
        )

    def test_domain_to_app(self):
        doc = with_edges(("tessera-chats", "tessera-api"))
        self.assertEqual(
            self.violations(doc),
            ["tessera-chats → tessera-api: a domain crate may not depend on an app "
             "(tessera-api) (layering.toml)"],
        )

    def test_disallowed_adapter_edge(self):
        doc = with_edges(("tessera-store", "tessera-auth"))
        errors = self.violations(doc)
        self.assertEqual(len(errors), 1)
        self.assertTrue(errors[0].startswith(
            "tessera-store → tessera-auth: an adapter may not depend on another adapter"))

    def test_allowed_adapter_edge_goes_one_way_only(self):
        doc = with_edges(("tessera-llm-http", "tessera-llm-openai"))
        errors = self.violations(doc)
        self.assertEqual(len(errors), 1)
        self.assertIn("tessera-llm-http → tessera-llm-openai", errors[0])

    def test_adapter_to_app(self):
        doc = with_edges(("tessera-auth", "tessera-admin"))
        self.assertEqual(
            self.violations(doc),
            ["tessera-auth → tessera-admin: nothing may depend on an app (layering.toml)"],
        )

    def test_unlisted_app_edge(self):
        doc = with_edges(("tessera-api", "tessera-admin"))
        errors = self.violations(doc)
        self.assertEqual(len(errors), 1)
        self.assertIn("an app may not depend on another app", errors[0])

    def test_unclassified_member(self):
        doc = with_edges(("tessera-newthing", "tessera-kernel"),
                         members=MEMBERS + ["tessera-newthing"])
        errors = self.violations(doc)
        self.assertEqual(len(errors), 1)
        self.assertIn("tessera-newthing: workspace member not classified", errors[0])
        self.assertIn("layering.toml", errors[0])

    def test_crate_in_two_classes(self):
        rules = dict(RULES_DOC, apps={"crates": ["tessera-api", "tessera-admin", "tessera-auth"]})
        errors = self.violations(metadata(CLEAN), rules)
        self.assertTrue(any("tessera-auth: listed under both adapters and apps" in e for e in errors))

    def test_stale_entries(self):
        rules = dict(
            RULES_DOC,
            domains={"crates": RULES_DOC["domains"]["crates"] + ["tessera-gone"]},
            allowed_adapter_edge=RULES_DOC["allowed_adapter_edge"]
            + [{"from": "tessera-store", "to": "tessera-auth", "reason": "was"}],
        )
        errors = self.violations(metadata(CLEAN), rules)
        self.assertEqual(len(errors), 2)
        self.assertIn("tessera-gone: listed in layering.toml but not a workspace member", errors[0])
        self.assertIn("tessera-store → tessera-auth: listed in [[allowed_adapter_edge]]", errors[1])

    def test_example_reaching_the_http_framework(self):
        rules = dict(RULES_DOC, examples={"crates": ["chat-example"], "forbidden": ["actix-web"]})
        graph = dict(CLEAN, **{
            "chat-example": ["tessera-chats", "tessera-store"],
            "actix-web": [],
        })
        self.assertEqual(self.violations(metadata(graph, MEMBERS + ["chat-example"]), rules), [])
        graph["tessera-store"] = ["tessera-chats", "diesel", "actix-web"]
        errors = self.violations(metadata(graph, MEMBERS + ["chat-example"]), rules)
        self.assertTrue(
            any("chat-example → tessera-store → actix-web: an example may not depend on actix-web"
                in e for e in errors),
            errors,
        )

    def test_example_depending_on_an_app(self):
        rules = dict(RULES_DOC, examples={"crates": ["chat-example"], "forbidden": []})
        graph = dict(CLEAN, **{"chat-example": ["tessera-api"]})
        errors = self.violations(metadata(graph, MEMBERS + ["chat-example"]), rules)
        self.assertEqual(
            errors, ["chat-example → tessera-api: nothing may depend on an app (layering.toml)"]
        )

    def test_wire_crate_stands_on_domains_alone(self):
        rules = dict(RULES_DOC, wire={"crates": ["tessera-wire"]})
        graph = dict(CLEAN, **{"tessera-wire": ["tessera-chats", "serde"]})
        graph["tessera-api"] = CLEAN["tessera-api"] + ["tessera-wire"]
        members = MEMBERS + ["tessera-wire"]
        self.assertEqual(self.violations(metadata(graph, members), rules), [])
        graph["tessera-wire"] = ["tessera-chats", "reqwest", "tessera-store"]
        self.assertEqual(
            self.violations(metadata(graph, members), rules),
            ["tessera-wire → reqwest: a wire crate may not depend on reqwest (layering.toml)",
             "tessera-wire → tessera-store: a wire crate may not depend on an adapter "
             "(tessera-store) (layering.toml)"],
        )

    def test_domain_to_wire(self):
        rules = dict(RULES_DOC, wire={"crates": ["tessera-wire"]})
        graph = dict(CLEAN, **{"tessera-wire": ["tessera-kernel"]})
        graph["tessera-chats"] = CLEAN["tessera-chats"] + ["tessera-wire"]
        self.assertEqual(
            self.violations(metadata(graph, MEMBERS + ["tessera-wire"]), rules),
            ["tessera-chats → tessera-wire: a domain crate may not depend on a wire crate "
             "(tessera-wire) (layering.toml)"],
        )

    def test_composition_crate_stays_below_the_apps_and_off_the_http_framework(self):
        rules = dict(RULES_DOC, composition={"crates": ["tessera-setup"], "forbidden": ["actix-web"]})
        graph = dict(CLEAN, **{
            "tessera-setup": ["tessera-store", "tessera-auth", "tessera-chats"],
            "actix-web": [],
        })
        graph["tessera-api"] = CLEAN["tessera-api"] + ["tessera-setup", "actix-web"]
        graph["tessera-admin"] = ["tessera-setup", "tessera-store"]
        members = MEMBERS + ["tessera-setup"]
        # Without the admin → api edge, the allowed app edge is stale: drop it here.
        rules["allowed_app_edge"] = []
        self.assertEqual(self.violations(metadata(graph, members), rules), [])
        graph["tessera-setup"] = ["tessera-store", "tessera-api"]
        self.assertEqual(
            self.violations(metadata(graph, members), rules),
            ["tessera-setup → tessera-api: a composition crate may not depend on an app "
             "(tessera-api) ([composition] in layering.toml)"],
        )
        graph["tessera-setup"] = ["tessera-store"]
        graph["tessera-store"] = ["tessera-chats", "diesel", "actix-web"]
        self.assertEqual(
            self.violations(metadata(graph, members), rules),
            ["tessera-setup → tessera-store → actix-web: a composition crate may not depend on "
             "actix-web ([composition] in layering.toml)"],
        )

    def test_repository_rules_file_parses(self):
        rules = load_rules(ROOT / RULES)
        for key in ("domains", "adapters", "apps", "forbidden_in_domains", "allowed_adapter_edge"):
            self.assertIn(key, rules)
        for edge in rules["allowed_adapter_edge"] + rules.get("allowed_app_edge", []):
            self.assertTrue(edge.get("reason"), f"edge {edge} has no reason")


if __name__ == "__main__":
    unittest.main()
