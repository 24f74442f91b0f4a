//! (being moved)
