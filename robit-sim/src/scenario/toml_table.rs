//! A TOML table read by serde with errors the caller words: [`read`] reports what is
//! wrong as a [`Problem`] — an unknown variant, a field that is not the type's, a missing
//! field — rather than as serde's sentence, so that a fault's errors say it in the
//! scenario's words.

use std::fmt;

use serde::de::value::{MapDeserializer, SeqDeserializer};
use serde::de::{self, Deserialize, Deserializer, IntoDeserializer, Unexpected, Visitor};

/// Reads `table` as a `T`.
///
/// # Errors
///
/// What serde found wrong, as a [`Problem`].
pub(super) fn read<T: for<'de> Deserialize<'de>>(table: toml::Table) -> Result<T, Problem> {
    T::deserialize(Value(toml::Value::Table(table)))
}

/// What is wrong with a table, for the caller to word.
#[derive(Debug)]
pub(super) enum Problem {
    /// An enum's tag names no variant: the tag, and the variants there are.
    UnknownVariant(String, &'static [&'static str]),
    /// A field the type does not have: the field, and the fields the type has.
    UnknownField(String, &'static [&'static str]),
    /// A field the type needs and the table does not have.
    MissingField(&'static str),
    /// Anything else (a value of the wrong type, an invalid duration), in serde's or
    /// the type's own words.
    Other(String),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownVariant(variant, expected) => write!(
                f,
                "unknown variant {variant:?}: expected one of {}",
                expected.join(", ")
            ),
            Self::UnknownField(field, expected) => write!(
                f,
                "unknown field `{field}`: expected one of {}",
                expected.join(", ")
            ),
            Self::MissingField(field) => write!(f, "missing field `{field}`"),
            Self::Other(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for Problem {}

impl de::Error for Problem {
    fn custom<T: fmt::Display>(message: T) -> Self {
        Self::Other(message.to_string())
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        Self::UnknownVariant(variant.to_owned(), expected)
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        Self::UnknownField(field.to_owned(), expected)
    }

    fn missing_field(field: &'static str) -> Self {
        Self::MissingField(field)
    }
}

/// A TOML value as a serde deserializer whose errors are [`Problem`]s.
struct Value(toml::Value);

impl<'de> Deserializer<'de> for Value {
    type Error = Problem;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Problem> {
        match self.0 {
            toml::Value::String(text) => visitor.visit_string(text),
            toml::Value::Integer(value) => visitor.visit_i64(value),
            toml::Value::Float(value) => visitor.visit_f64(value),
            toml::Value::Boolean(value) => visitor.visit_bool(value),
            toml::Value::Datetime(_) => Err(de::Error::invalid_type(
                Unexpected::Other("date-time"),
                &"a string, a number, a boolean or a list",
            )),
            toml::Value::Array(items) => {
                let mut items = SeqDeserializer::new(items.into_iter().map(Value));
                let found = visitor.visit_seq(&mut items)?;
                items.end()?;
                Ok(found)
            }
            toml::Value::Table(table) => {
                let mut entries =
                    MapDeserializer::new(table.into_iter().map(|(key, value)| (key, Value(value))));
                let found = visitor.visit_map(&mut entries)?;
                entries.end()?;
                Ok(found)
            }
        }
    }

    /// A value that is there is `Some`: an absent field never reaches a deserializer.
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Problem> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Problem> {
        visitor.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf unit unit_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

impl IntoDeserializer<'_, Problem> for Value {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}
