//! Batch formats: what a batch of raw BSON documents is turned into for JS.

pub mod arrow;
