//! The decision: combine rows into the hash table, or pass them through as one-row partial states.
//!
//! Every row's key hash goes into the *epoch sketch*: the keys seen since the state was last emitted for lack
//! of memory (switching modes does not end an epoch). After `min_rows` rows (or once the state holds
//! `min_state_bytes`), and then once per window of
//! input rows, the gate measures how much the epoch sketch grew over the window: `new` ≈ keys of the window
//! that were not seen earlier in the epoch (repeats of a key already inserted never change a register, so a
//! window of repeats measures exactly 0). `reduction = 1 - new / rows` is the share of the window's rows that a
//! state holding the epoch's keys would have combined away.
//! - aggregating and `reduction < min_reduction`: emit the state, pass rows through from now on;
//! - passing through and `reduction >= min_reduction + 0.15` (hysteresis): keys repeat again (a new burst, or
//!   the second lap of a cycle): aggregate from now on.
//!
//! A window is at least `min_rows / 4` rows and at least `1024 · estimate / 2^precision` rows (6% of the epoch's
//! keys at precision 14): adding `w` new keys to a sketch of `n` keys changes about `w · 2^p / n` registers,
//! and the noise of `new` shrinks with the number of changed registers — the window grows with the epoch so
//! that the measurement stays meaningful (a 20M-key epoch re-decides every ~1.2M rows).
//!
//! A second sketch follows the keys of the current state when it started in the middle of an epoch (after a
//! switch), so that each emitted state reports its estimated group count beside the exact one (a metric that
//! shows the sketch working in production); a state that started with its epoch uses the epoch sketch.
use datafusion_common::{plan_err, Result};

use super::sketch::KeySketch;

/// The gate's knobs (later from the proto's `Aggregate` message).
#[derive(Debug, Clone, PartialEq)]
pub struct GateConfig {
    /// Off: a plain partial aggregate (no sketches, never passes through).
    pub enabled: bool,
    /// Input rows aggregated before the first decision.
    pub min_rows: usize,
    /// ... or once the aggregation state has reserved this many bytes, whichever comes first (0: rows only).
    /// Wide keys or buffers fill memory long before `min_rows` rows.
    pub min_state_bytes: usize,
    /// Pass through when combining is estimated to remove less than this share of the rows (0..=1).
    pub min_reduction: f64,
    /// HyperLogLog++ precision, 4..=18.
    pub precision: u8,
    /// Test knob: pass every row through from the first one.
    pub force_pass_through: bool,
    /// Benchmark baseline instead of the sketches: the fixed first-rows probe of DataFusion and Velox. After
    /// `min_rows` rows, pass through for good when the state's exact group count shows a reduction below
    /// `min_reduction`; never revisited.
    pub fixed_probe: bool,
}

impl Default for GateConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            min_rows: 100_000,
            min_state_bytes: 0,
            min_reduction: 0.2,
            precision: 14,
            force_pass_through: false,
            fixed_probe: false,
        }
    }
}

impl GateConfig {
    pub fn validate(&self) -> Result<()> {
        if !(0.0..=1.0).contains(&self.min_reduction) {
            return plan_err!("adaptive aggregate: reduction ratio {} not in [0, 1]", self.min_reduction);
        }
        if !(4..=18).contains(&self.precision) {
            return plan_err!("adaptive aggregate: HyperLogLog precision {} not in 4..=18", self.precision);
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Aggregate,
    PassThrough,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Keep,
    /// Emit the state, then pass this batch and the next ones through.
    ToPassThrough,
    /// Aggregate this batch and the next ones.
    ToAggregate,
}

/// One measurement, kept for tests and debugging.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measurement {
    /// Input rows seen when the window closed.
    pub at_row: usize,
    pub window_rows: usize,
    pub new_keys: f64,
    pub reduction: f64,
}

/// A window must be long enough for a window of new keys to change about this many registers of the epoch
/// sketch: measured at precision 14, ~360 changed registers leave the estimated share of new keys with a
/// standard deviation of ~7%, ~1000 with ~3%, far from any useful threshold.
const WINDOW_REGISTERS: f64 = 1024.0;

/// Going back to aggregating needs the reduction to clear the ratio by this margin: the measurement of new
/// keys against a large epoch has a long tail (up to ~17% low seen on unique keys), and flapping costs a state
/// emit each time.
const HYSTERESIS: f64 = 0.15;

pub struct Gate {
    config: GateConfig,
    mode: Mode,
    epoch: KeySketch,
    epoch_estimate: f64,
    state: KeySketch,
    /// The current state started with the epoch, so its keys are the epoch's keys: the epoch sketch serves for
    /// both and `state` is not fed (one insert per row instead of two in the common cases).
    state_is_epoch: bool,
    rows_seen: usize,
    window_rows: usize,
    window_start_estimate: f64,
    decided_once: bool,
    pub history: Vec<Measurement>,
}

impl Gate {
    pub fn try_new(config: GateConfig) -> Result<Self> {
        config.validate()?;
        let mode = if config.force_pass_through { Mode::PassThrough } else { Mode::Aggregate };
        Ok(Self {
            epoch: KeySketch::try_new(config.precision)?,
            state: KeySketch::try_new(config.precision)?,
            state_is_epoch: true,
            config,
            mode,
            epoch_estimate: 0.0,
            rows_seen: 0,
            window_rows: 0,
            window_start_estimate: 0.0,
            decided_once: false,
            history: vec![],
        })
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn rows_seen(&self) -> usize {
        self.rows_seen
    }

    /// Does the gate need the key hashes at all? (Not when disabled, forced or a fixed probe.)
    pub fn sketching(&self) -> bool {
        self.config.enabled && !self.config.force_pass_through && !self.config.fixed_probe
    }

    /// Is this the fixed first-rows probe (decided by [`Gate::probe`])?
    pub fn fixed_probe(&self) -> bool {
        self.config.enabled && !self.config.force_pass_through && self.config.fixed_probe
    }

    /// The fixed probe, after a batch went into the hash table, which now holds `groups` groups: once
    /// `min_rows` rows were seen, decides once and for all.
    pub fn probe(&mut self, groups: usize) -> Decision {
        if !self.fixed_probe() || self.decided_once || self.rows_seen < self.config.min_rows {
            return Decision::Keep;
        }
        self.decided_once = true;
        let reduction = 1.0 - groups as f64 / self.rows_seen as f64;
        self.history.push(Measurement {
            at_row: self.rows_seen,
            window_rows: self.rows_seen,
            new_keys: groups as f64,
            reduction,
        });
        if reduction < self.config.min_reduction {
            self.mode = Mode::PassThrough;
            Decision::ToPassThrough
        } else {
            Decision::Keep
        }
    }

    /// Takes the next batch's key hashes (before the batch is processed) and the bytes the aggregation state
    /// holds now, and decides the mode for the batch.
    pub fn observe(&mut self, hashes: &[u64], state_bytes: usize) -> Decision {
        self.rows_seen += hashes.len();
        if !self.sketching() {
            return Decision::Keep;
        }
        self.epoch.insert_hashes(hashes);
        self.window_rows += hashes.len();
        let window = if self.decided_once {
            (self.config.min_rows / 4)
                .max((WINDOW_REGISTERS * self.epoch_estimate / self.epoch.registers() as f64) as usize)
                .max(1)
        } else {
            self.config.min_rows.max(1)
        };
        let state_full =
            !self.decided_once && self.config.min_state_bytes > 0 && state_bytes >= self.config.min_state_bytes;
        if self.window_rows < window && !state_full {
            return Decision::Keep;
        }
        self.epoch_estimate = self.epoch.estimate();
        let new_keys = (self.epoch_estimate - self.window_start_estimate).clamp(0.0, self.window_rows as f64);
        let reduction = 1.0 - new_keys / self.window_rows as f64;
        self.history.push(Measurement { at_row: self.rows_seen, window_rows: self.window_rows, new_keys, reduction });
        self.window_rows = 0;
        self.window_start_estimate = self.epoch_estimate;
        self.decided_once = true;
        match self.mode {
            Mode::Aggregate if reduction < self.config.min_reduction => {
                self.mode = Mode::PassThrough;
                // Whatever state comes next starts in the middle of this epoch.
                self.state_is_epoch = false;
                Decision::ToPassThrough
            }
            Mode::PassThrough if reduction >= self.config.min_reduction + HYSTERESIS => {
                self.mode = Mode::Aggregate;
                Decision::ToAggregate
            }
            _ => Decision::Keep,
        }
    }

    /// A batch of `rows` rows when not sketching (disabled or forced).
    pub fn observe_unsketched(&mut self, rows: usize) {
        self.rows_seen += rows;
    }

    /// The batch with these hashes went into the hash table.
    pub fn record_state(&mut self, hashes: &[u64]) {
        if self.sketching() && !self.state_is_epoch {
            self.state.insert_hashes(hashes);
        }
    }

    /// The state was emitted; returns the sketch's estimate of its group count.
    pub fn state_emitted(&mut self) -> f64 {
        if !self.sketching() {
            return 0.0;
        }
        let est = if self.state_is_epoch { self.epoch.estimate() } else { self.state.estimate() };
        self.state.clear();
        // The next state starts in the middle of the epoch.
        self.state_is_epoch = false;
        est
    }

    /// The state was emitted because memory ran out: its keys no longer combine with anything, so a new
    /// epoch starts (and the next state with it).
    pub fn memory_flush(&mut self) {
        if self.sketching() {
            self.epoch.clear();
            self.epoch_estimate = 0.0;
            self.window_start_estimate = 0.0;
            self.window_rows = 0;
            self.state_is_epoch = true;
        }
    }

    /// Gives back what memory the sketches can (their exact sets of the first keys).
    pub fn shed(&mut self) {
        self.epoch.shed();
        self.state.shed();
    }

    /// Bytes the sketches hold now.
    pub fn size_bytes(&self) -> usize {
        if self.sketching() {
            self.epoch.size_bytes() + self.state.size_bytes()
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operators::aggregate::adaptive::sketch::hash_keys;
    use arrow::array::{ArrayRef, Int64Array};
    use std::sync::Arc;

    fn hashes(keys: impl IntoIterator<Item = i64>) -> Vec<u64> {
        let a = Int64Array::from_iter_values(keys);
        let n = a.len();
        let mut h = vec![];
        hash_keys(&[Arc::new(a) as ArrayRef], n, &mut h).unwrap();
        h
    }

    impl Gate {
        fn observe_rows(&mut self, h: &[u64]) -> Decision {
            self.observe(h, 0)
        }
    }

    #[test]
    fn state_bytes_threshold_decides_before_min_rows() {
        let mut g = Gate::try_new(GateConfig { min_state_bytes: 1 << 20, ..cfg(1_000_000) }).unwrap();
        assert_eq!(g.observe(&hashes(0..1000), 1000), Decision::Keep);
        assert_eq!(g.observe(&hashes(1000..2000), 2 << 20), Decision::ToPassThrough);
    }

    fn cfg(min_rows: usize) -> GateConfig {
        GateConfig { min_rows, ..Default::default() }
    }

    #[test]
    fn unique_keys_switch_at_min_rows() {
        let mut g = Gate::try_new(cfg(10_000)).unwrap();
        let mut switched_at = None;
        for b in 0..20 {
            let d = g.observe_rows(&hashes(b * 1000..(b + 1) * 1000));
            if d == Decision::ToPassThrough {
                switched_at = Some(g.rows_seen());
            }
        }
        assert_eq!(switched_at, Some(10_000));
        assert_eq!(g.mode(), Mode::PassThrough);
    }

    #[test]
    fn repeated_keys_never_switch() {
        let mut g = Gate::try_new(cfg(10_000)).unwrap();
        for b in 0..50 {
            assert_eq!(g.observe_rows(&hashes((b * 1000..(b + 1) * 1000).map(|i| i % 1000))), Decision::Keep);
        }
    }

    #[test]
    fn fixed_probe_decides_once_from_the_first_rows() {
        let mut g = Gate::try_new(GateConfig { fixed_probe: true, ..cfg(10_000) }).unwrap();
        assert!(!g.sketching());
        // Unique keys for the first 10k rows: the probe stops combining ...
        g.observe_unsketched(5_000);
        assert_eq!(g.probe(5_000), Decision::Keep);
        g.observe_unsketched(5_000);
        assert_eq!(g.probe(10_000), Decision::ToPassThrough);
        assert_eq!(g.mode(), Mode::PassThrough);
        // ... and never looks again, however much keys repeat later (what the sketches would see).
        g.observe_unsketched(1_000_000);
        assert_eq!(g.probe(1), Decision::Keep);
        assert_eq!(g.mode(), Mode::PassThrough);
        // Repeating keys at the probe: combine for good.
        let mut g = Gate::try_new(GateConfig { fixed_probe: true, ..cfg(10_000) }).unwrap();
        g.observe_unsketched(10_000);
        assert_eq!(g.probe(1_000), Decision::Keep);
        g.observe_unsketched(10_000);
        assert_eq!(g.probe(20_000), Decision::Keep);
        assert_eq!(g.mode(), Mode::Aggregate);
    }

    #[test]
    fn forced_and_disabled_never_decide() {
        let mut g = Gate::try_new(GateConfig { force_pass_through: true, ..cfg(10) }).unwrap();
        assert_eq!(g.mode(), Mode::PassThrough);
        assert_eq!(g.observe_rows(&hashes(0..1000)), Decision::Keep);
        let mut g = Gate::try_new(GateConfig { enabled: false, ..cfg(10) }).unwrap();
        assert_eq!(g.observe_rows(&hashes(0..1000)), Decision::Keep);
        assert_eq!(g.mode(), Mode::Aggregate);
        assert!(Gate::try_new(GateConfig { min_reduction: 1.5, ..cfg(10) }).is_err());
    }
}
