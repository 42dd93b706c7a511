//! The plan contract: prost types generated from `proto/ember/*.proto`.
#![allow(clippy::all)]
include!(concat!(env!("OUT_DIR"), "/ember.rs"));
