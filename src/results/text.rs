//! Shared text for the rows of a loaded run: a run of 10^6 units repeats the same few hundred
//! values (ops, solvers, devices, statuses' phases, parameter values) in every row, so each
//! distinct value is stored once and the rows hold an 8-byte handle to it (issue 40, "Scale":
//! a row of owned strings took about 2.3 KB, most of it small allocations).

use arcstr::ArcStr;
use std::borrow::Borrow;
use std::collections::HashSet;
use std::fmt;
use std::ops::Deref;

/// An immutable, cheaply cloned string; reads as a `&str`. One pointer wide (`arcstr`'s thin
/// shared string), so a row's dozen texts and its parameter values take 8 bytes each.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Text(ArcStr);

impl Text {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Text {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text(ArcStr::from(s))
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text(ArcStr::from(s))
    }
}

impl From<&String> for Text {
    fn from(s: &String) -> Text {
        Text(ArcStr::from(s.as_str()))
    }
}

impl From<Text> for String {
    fn from(t: Text) -> String {
        t.0.to_string()
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for Text {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<Text> for str {
    fn eq(&self, other: &Text) -> bool {
        *self == *other.0
    }
}

impl PartialEq<Text> for &str {
    fn eq(&self, other: &Text) -> bool {
        **self == *other.0
    }
}

impl PartialEq<Text> for String {
    fn eq(&self, other: &Text) -> bool {
        **self == *other.0
    }
}

impl serde::Serialize for Text {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// Hands out one [`Text`] per distinct value.
#[derive(Default)]
pub struct Interner(HashSet<Text>);

impl Interner {
    /// The shared copy of `s`, made on first sight.
    pub fn get(&mut self, s: &str) -> Text {
        if let Some(t) = self.0.get(s) {
            return t.clone();
        }
        let t = Text::from(s);
        self.0.insert(t.clone());
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interned_values_share_one_allocation_and_compare_as_text() {
        let mut i = Interner::default();
        let (a, b) = (i.get("conv2d"), i.get(&String::from("conv2d")));
        assert!(ArcStr::ptr_eq(&a.0, &b.0), "one copy per distinct value");
        assert_eq!(std::mem::size_of::<Text>(), 8);
        assert_eq!(a, "conv2d");
        assert_eq!("conv2d", a);
        assert_eq!(a, String::from("conv2d"));
        assert_ne!(i.get("gemm"), a);
        assert_eq!(format!("{a} {a:?}"), "conv2d \"conv2d\"");
        assert_eq!(Text::default(), "");
    }
}
