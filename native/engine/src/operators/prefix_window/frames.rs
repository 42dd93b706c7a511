//! Window frames: Spark's ROWS frames of every bound shape and the RANGE frames whose bounds are
//! UNBOUNDED / CURRENT ROW (peer groups), turned into one half-open row range `[start, end)` per output row.
use std::ops::Range;

use datafusion_common::Result;

use crate::error::plan_error;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bound {
    UnboundedPreceding,
    Preceding(u64),
    CurrentRow,
    Following(u64),
    UnboundedFollowing,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameUnit {
    Rows,
    Range,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Frame {
    pub unit: FrameUnit,
    pub lower: Bound,
    pub upper: Bound,
}

/// Offsets beyond this are clamped: no partition is that long, and the arithmetic stays far from overflow.
const MAX_OFFSET: u64 = 1 << 40;

impl Frame {
    pub fn rows(lower: Bound, upper: Bound) -> Self {
        Self { unit: FrameUnit::Rows, lower, upper }
    }

    /// Spark's default frame with ORDER BY: RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW.
    pub fn default_range() -> Self {
        Self { unit: FrameUnit::Range, lower: Bound::UnboundedPreceding, upper: Bound::CurrentRow }
    }

    /// Accepts the frames Spark's analyzer accepts and that this operator evaluates exactly as Spark does.
    pub fn validate(&self) -> Result<()> {
        if self.lower == Bound::UnboundedFollowing || self.upper == Bound::UnboundedPreceding {
            return Err(plan_error(format!("invalid window frame {self:?}")));
        }
        if let (Some(l), Some(u)) = (self.lower_offset(), self.upper_offset()) {
            if l > u {
                return Err(plan_error(format!("window frame lower bound after its upper bound: {self:?}")));
            }
        }
        if self.unit == FrameUnit::Range
            && (matches!(self.lower, Bound::Preceding(_) | Bound::Following(_))
                || matches!(self.upper, Bound::Preceding(_) | Bound::Following(_)))
        {
            // Value offsets (RANGE BETWEEN 3 PRECEDING ...) compare order-key values with Spark's own
            // arithmetic per type; not matched natively yet.
            return Err(plan_error("RANGE frames with value offsets are not supported natively"));
        }
        Ok(())
    }

    fn lower_offset(&self) -> Option<i64> {
        offset(self.lower)
    }

    fn upper_offset(&self) -> Option<i64> {
        offset(self.upper)
    }

    /// Whether every row's frame starts at its partition's first row.
    pub fn unbounded_preceding(&self) -> bool {
        self.lower == Bound::UnboundedPreceding
    }

    /// The frame `[start, end)` of every row of a chunk, as two vectors indexed by row. Both are non-decreasing
    /// within a partition and clamped to it, and `start <= end` (an empty frame has `start == end`).
    pub fn bounds(&self, layout: &Layout) -> (Vec<usize>, Vec<usize>) {
        let n = layout.len;
        let mut starts = Vec::with_capacity(n);
        let mut ends = Vec::with_capacity(n);
        if self.unit == FrameUnit::Rows {
            if let (Some(lo), Some(hi)) = (self.lower_offset(), self.upper_offset()) {
                // The sliding case, in plain arithmetic: [i + lo, i + hi + 1) clamped to the partition.
                for part in &layout.partitions {
                    let (ps, pe) = (part.start as i64, part.end as i64);
                    for r in ps..pe {
                        let s = (r + lo).clamp(ps, pe);
                        starts.push(s as usize);
                        ends.push((r + hi + 1).clamp(s, pe) as usize);
                    }
                }
                return (starts, ends);
            }
        }
        for part in &layout.partitions {
            let (ps, pe) = (part.start as i64, part.end as i64);
            for i in part.clone() {
                let r = i as i64;
                let lo = match self.lower {
                    Bound::UnboundedPreceding => ps,
                    Bound::Preceding(k) => r - clamp_offset(k),
                    Bound::CurrentRow if self.unit == FrameUnit::Range => layout.peer(i).start as i64,
                    Bound::CurrentRow => r,
                    Bound::Following(k) => r + clamp_offset(k),
                    Bound::UnboundedFollowing => pe,
                };
                let hi = match self.upper {
                    Bound::UnboundedPreceding => ps,
                    Bound::Preceding(k) => r - clamp_offset(k) + 1,
                    Bound::CurrentRow if self.unit == FrameUnit::Range => layout.peer(i).end as i64,
                    Bound::CurrentRow => r + 1,
                    Bound::Following(k) => r + clamp_offset(k) + 1,
                    Bound::UnboundedFollowing => pe,
                };
                let lo = lo.clamp(ps, pe);
                let hi = hi.clamp(lo, pe);
                starts.push(lo as usize);
                ends.push(hi as usize);
            }
        }
        (starts, ends)
    }
}

fn clamp_offset(k: u64) -> i64 {
    k.min(MAX_OFFSET) as i64
}

fn offset(b: Bound) -> Option<i64> {
    match b {
        Bound::Preceding(k) => Some(-clamp_offset(k)),
        Bound::CurrentRow => Some(0),
        Bound::Following(k) => Some(clamp_offset(k)),
        _ => None,
    }
}

/// Where a chunk's partitions and peer groups (rows equal in partition and order keys) are.
pub struct Layout {
    pub len: usize,
    pub partitions: Vec<Range<usize>>,
    /// Peer groups in row order; empty when no function needs them.
    pub peers: Vec<Range<usize>>,
    /// For every row, the index of its peer group in `peers` (empty when `peers` is).
    pub peer_of: Vec<u32>,
}

impl Layout {
    pub fn new(len: usize, partitions: Vec<Range<usize>>, peers: Vec<Range<usize>>) -> Self {
        let mut peer_of = Vec::new();
        if !peers.is_empty() {
            peer_of.reserve(len);
            for (g, r) in peers.iter().enumerate() {
                peer_of.extend(std::iter::repeat_n(g as u32, r.len()));
            }
        }
        Self { len, partitions, peers, peer_of }
    }

    pub fn peer(&self, row: usize) -> &Range<usize> {
        &self.peers[self.peer_of[row] as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(parts: &[usize]) -> Layout {
        let mut ranges = vec![];
        let mut s = 0;
        for &p in parts {
            ranges.push(s..s + p);
            s += p;
        }
        Layout::new(s, ranges, vec![])
    }

    #[test]
    fn rows_bounds_are_clamped_to_partitions() {
        let l = layout(&[3, 2]);
        let (s, e) = Frame::rows(Bound::Preceding(1), Bound::CurrentRow).bounds(&l);
        assert_eq!(s, vec![0, 0, 1, 3, 3]);
        assert_eq!(e, vec![1, 2, 3, 4, 5]);
        let (s, e) = Frame::rows(Bound::Following(1), Bound::Following(5)).bounds(&l);
        assert_eq!(s, vec![1, 2, 3, 4, 5]);
        assert_eq!(e, vec![3, 3, 3, 5, 5]);
        let (s, e) = Frame::rows(Bound::Preceding(5), Bound::Preceding(2)).bounds(&l);
        assert_eq!(s, vec![0, 0, 0, 3, 3]);
        assert_eq!(e, vec![0, 0, 1, 3, 3]);
        let (s, e) = Frame::rows(Bound::UnboundedPreceding, Bound::UnboundedFollowing).bounds(&l);
        assert_eq!(s, vec![0, 0, 0, 3, 3]);
        assert_eq!(e, vec![3, 3, 3, 5, 5]);
    }

    #[test]
    fn invalid_frames_are_plan_errors() {
        assert!(Frame::rows(Bound::Following(2), Bound::Following(1)).validate().is_err());
        assert!(Frame::rows(Bound::CurrentRow, Bound::Preceding(1)).validate().is_err());
        assert!(Frame::rows(Bound::UnboundedFollowing, Bound::UnboundedFollowing).validate().is_err());
        let range = Frame { unit: FrameUnit::Range, lower: Bound::Preceding(3), upper: Bound::CurrentRow };
        assert!(range.validate().is_err());
        assert!(Frame::default_range().validate().is_ok());
        assert!(Frame::rows(Bound::Preceding(0), Bound::Following(0)).validate().is_ok());
    }
}
