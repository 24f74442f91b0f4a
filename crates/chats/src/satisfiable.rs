//! Whether any JSON value can match a JSON Schema, as far as the value's type decides it: a
//! schema whose `type`, `const`, `enum`, `allOf`, `anyOf` and `oneOf` leave no JSON type
//! (e.g. `allOf` of a string and an integer) is the request's fault, found before any model
//! is called. Constraints within a type (lengths, ranges, patterns) are not judged here.

use serde_json::Value;

/// A set of JSON types as bits; `number` is an integer or a non-integer number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Types(u8);

impl Types {
    const NULL: Self = Self(1);
    const BOOLEAN: Self = Self(2);
    const OBJECT: Self = Self(4);
    const ARRAY: Self = Self(8);
    const INTEGER: Self = Self(16);
    const FRACTION: Self = Self(32);
    const STRING: Self = Self(64);
    const ANY: Self = Self(127);
    const NONE: Self = Self(0);

    fn named(name: &str) -> Self {
        match name {
            "null" => Self::NULL,
            "boolean" => Self::BOOLEAN,
            "object" => Self::OBJECT,
            "array" => Self::ARRAY,
            "integer" => Self::INTEGER,
            "number" => Self(Self::INTEGER.0 | Self::FRACTION.0),
            "string" => Self::STRING,
            // An unknown name is the meta-schema check's to report.
            _ => Self::ANY,
        }
    }

    fn of(value: &Value) -> Self {
        match value {
            Value::Null => Self::NULL,
            Value::Bool(_) => Self::BOOLEAN,
            Value::Object(_) => Self::OBJECT,
            Value::Array(_) => Self::ARRAY,
            Value::Number(n) if n.is_i64() || n.is_u64() => Self::INTEGER,
            Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => Self::INTEGER,
            Value::Number(_) => Self::FRACTION,
            Value::String(_) => Self::STRING,
        }
    }

    fn and(self, other: Self) -> Self {
        Self(self.0 & other.0)
    }

    fn or(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

/// Whether some JSON value's type is allowed by `schema` (`$ref`s are assumed satisfiable).
pub fn is_satisfiable(schema: &Value) -> bool {
    allowed(schema) != Types::NONE
}

fn allowed(schema: &Value) -> Types {
    let fields = match schema {
        Value::Bool(false) => return Types::NONE,
        Value::Object(fields) => fields,
        _ => return Types::ANY,
    };
    let mut types = Types::ANY;
    match fields.get("type") {
        Some(Value::String(name)) => types = Types::named(name),
        Some(Value::Array(names)) => {
            types = names
                .iter()
                .filter_map(Value::as_str)
                .map(Types::named)
                .fold(Types::NONE, Types::or);
        }
        _ => {}
    }
    if let Some(value) = fields.get("const") {
        types = types.and(Types::of(value));
    }
    if let Some(Value::Array(values)) = fields.get("enum") {
        types = types.and(values.iter().map(Types::of).fold(Types::NONE, Types::or));
    }
    if let Some(Value::Array(all)) = fields.get("allOf") {
        types = all.iter().map(allowed).fold(types, Types::and);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(any)) = fields.get(key) {
            types = types.and(any.iter().map(allowed).fold(Types::NONE, Types::or));
        }
    }
    types
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn conflicting_types_are_unsatisfiable() {
        for schema in [
            json!(false),
            json!({"allOf": [{"type": "string"}, {"type": "integer"}]}),
            json!({"type": "integer", "const": "seven"}),
            json!({"type": "string", "enum": [1, 2]}),
            json!({"type": "object", "anyOf": [{"type": "array"}, {"type": "null"}]}),
            json!({"type": "integer", "const": 1.5}),
            json!({"type": []}),
        ] {
            assert!(!is_satisfiable(&schema), "{schema}");
        }
    }

    #[test]
    fn compatible_types_are_satisfiable() {
        for schema in [
            json!(true),
            json!({}),
            json!({"type": "object", "properties": {"a": {"type": "string"}}}),
            json!({"allOf": [{"type": "number"}, {"type": "integer"}]}),
            json!({"type": ["string", "null"], "const": null}),
            json!({"oneOf": [{"type": "string"}, {"$ref": "#/$defs/x"}]}),
            json!({"type": "number", "const": 2.0}),
            json!({"enum": ["a", 1]}),
        ] {
            assert!(is_satisfiable(&schema), "{schema}");
        }
    }
}
