//! Native memory under Spark's memory manager.
//!
//! [`BrokerMemoryPool`] is the DataFusion `MemoryPool` of one native plan (one Spark task). Every reservation an
//! operator grows is asked of a [`MemoryBroker`]: in production the JNI bridge implements it over a JVM
//! `MemoryConsumer` in OFF_HEAP mode, so the bytes come out of Spark's `TaskMemoryManager` like any Spark
//! operator's; in tests a [`FixedBroker`] plays Spark with a fixed budget. A refusal (Spark granting less than
//! asked) makes `try_grow` fail with `ResourcesExhausted`, which DataFusion's spilling operators answer by spilling.
//!
//! **Headroom for consumers that cannot spill.** Operators of one plan share one pool, and a spilling operator
//! (a hash join's build, a sort's buffer) grows until Spark refuses. A consumer that cannot spill and asks after
//! that — an aggregate above the join, a sort's merge buffers — would get nothing and fail the task, although
//! the spilling operator could have given memory back (Spark's `TaskMemoryManager` would ask it to spill;
//! DataFusion has no such call-back). So the pool keeps a small *headroom* (see
//! [`BrokerMemoryPool::with_headroom`]; [`DEFAULT_HEADROOM_BYTES`] in native plans unless the plan's config sets
//! `memory_headroom_bytes` (`spark.ember.memory.headroomBytes`), at most an eighth of what
//! Spark grants when the plan starts), acquired from the broker up front and not lent to a consumer that can
//! spill (`MemoryConsumer::with_can_spill(true)`) while it holds memory: those are refused as soon as the broker
//! refuses, and spill. A consumer that cannot spill — or one that can but holds nothing, hence has nothing to
//! spill (a sort above a join that took the task's share) — is served from the headroom when the broker
//! refuses, as long as its reservation stays within the headroom's size (so one greedy non-spilling consumer,
//! e.g. a merge that grows per merged file until refused, cannot take all of it from the others).
//! Memory given back refills the headroom before it returns to Spark. The headroom is counted by Spark as this
//! task's (it is held from the broker), not as reserved by an operator.
//!
//! **Hand-overs.** Memory often moves from one consumer to another: a sort's sorted batches leave its buffer's
//! reservation (shrunk) and enter its merge's (grown), batch by batch. Returned to Spark in between, another
//! task can take it, and the merge fails although the plan's usage did not grow ("granted 48616 of
//! 196608 bytes requested by ExternalSorterMerge"). So the pool also keeps up to another headroom's worth of
//! memory given back (a *float*), which any consumer may take when Spark refuses; only beyond both does memory
//! go back to Spark (`memory_float_bytes`, `spark.ember.memory.floatBytes`; the headroom's size by default).
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use datafusion_common::{DataFusionError, Result};
use datafusion_execution::memory_pool::{MemoryLimit, MemoryPool, MemoryReservation};

/// The source of native memory: Spark's task memory manager, or a fake of it.
pub trait MemoryBroker: Send + Sync + fmt::Debug {
    /// Asks for `bytes`. Returns how many were granted: possibly fewer (even 0) when Spark is short.
    fn acquire(&self, bytes: usize) -> Result<usize>;
    /// Gives `bytes` back.
    fn release(&self, bytes: usize);
}

/// The headroom of a native plan's pool: a few batches of an aggregate's state or of a merge's buffers.
pub const DEFAULT_HEADROOM_BYTES: usize = 1 << 20;

/// A DataFusion memory pool that forwards every byte to a [`MemoryBroker`].
#[derive(Debug)]
pub struct BrokerMemoryPool {
    broker: Arc<dyn MemoryBroker>,
    /// Bytes held beyond what operators reserve, for consumers that cannot spill (see the module doc).
    headroom: usize,
    /// The most held beyond what operators reserve: the headroom and the float (see the module doc).
    retain: usize,
    state: Mutex<PoolState>,
    peak: AtomicUsize,
}

#[derive(Debug, Default)]
struct PoolState {
    /// Bytes reserved by operators.
    used: usize,
    /// Bytes held from the broker. Below `used` only after an infallible `grow` that the broker could not meet;
    /// above it by at most the headroom.
    held: usize,
}

impl BrokerMemoryPool {
    /// A pool without headroom: every refusal of the broker is a refusal of the pool.
    pub fn new(broker: Arc<dyn MemoryBroker>) -> Self {
        Self::with_headroom(broker, 0)
    }

    /// A pool that keeps up to `headroom` bytes from the broker for consumers that cannot spill, and as much again
    /// of memory given back as its float (see the module doc).
    pub fn with_headroom(broker: Arc<dyn MemoryBroker>, headroom: usize) -> Self {
        Self::with_headroom_and_float(broker, headroom, headroom)
    }

    /// A pool that keeps up to `headroom` bytes from the broker for consumers that cannot spill and up to `float`
    /// bytes of memory given back (see the module doc). It asks for 8 times the larger now and keeps an eighth
    /// of what it is granted as either at most: a task whose whole share is small (tests force spilling with
    /// pools of 128 KiB) keeps most of it for its spilling operators.
    pub fn with_headroom_and_float(broker: Arc<dyn MemoryBroker>, headroom: usize, float: usize) -> Self {
        let probe = headroom.max(float).saturating_mul(8);
        let granted = if probe > 0 { broker.acquire(probe).unwrap_or(0).min(probe) } else { 0 };
        let headroom = headroom.min(granted / 8);
        let float = float.min(granted / 8);
        if granted > headroom {
            broker.release(granted - headroom);
        }
        let held = headroom;
        let retain = headroom.saturating_add(float);
        Self { broker, headroom, retain, state: Mutex::new(PoolState { used: 0, held }), peak: AtomicUsize::new(0) }
    }

    /// Bytes held from the broker beyond what operators reserve (the headroom still free).
    pub fn spare(&self) -> usize {
        let s = self.state.lock().unwrap();
        s.held.saturating_sub(s.used)
    }

    /// The largest number of bytes reserved at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    fn note_peak(&self, used: usize) {
        self.peak.fetch_max(used, Ordering::Relaxed);
    }
}

impl fmt::Display for BrokerMemoryPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BrokerMemoryPool(reserved={})", self.reserved())
    }
}

impl MemoryPool for BrokerMemoryPool {
    fn name(&self) -> &str {
        "ember-broker"
    }

    /// Infallible growth (DataFusion uses it for memory it cannot give back, e.g. a batch already produced):
    /// take what the broker grants and account the rest as used, so it is released correctly later.
    fn grow(&self, _reservation: &MemoryReservation, additional: usize) {
        if additional == 0 {
            return; // Spark's TaskMemoryManager asserts on requests of 0 bytes
        }
        let granted = self.broker.acquire(additional).unwrap_or(0);
        let mut s = self.state.lock().unwrap();
        s.used += additional;
        s.held += granted;
        self.note_peak(s.used);
        // Keep no more spare than the headroom and the float.
        let excess = s.held.saturating_sub(s.used + self.retain);
        s.held -= excess;
        drop(s);
        if excess > 0 {
            self.broker.release(excess);
        }
    }

    fn shrink(&self, _reservation: &MemoryReservation, shrink: usize) {
        let mut s = self.state.lock().unwrap();
        s.used = s.used.saturating_sub(shrink);
        // Up to the headroom and the float, memory given back refills them; the rest goes back to Spark.
        let give_back = s.held.saturating_sub(s.used + self.retain);
        if give_back > 0 {
            s.held -= give_back;
            drop(s);
            self.broker.release(give_back);
        }
    }

    fn try_grow(&self, reservation: &MemoryReservation, additional: usize) -> Result<()> {
        if additional == 0 {
            return Ok(()); // Spark's TaskMemoryManager asserts on requests of 0 bytes
        }
        let granted = self.broker.acquire(additional)?;
        let mut s = self.state.lock().unwrap();
        if granted < additional {
            // The float serves what the broker refused to anyone; the headroom a consumer that cannot spill and
            // whose reservation stays within the headroom's size, or one that can spill but holds nothing yet
            // (a sort above a join that holds the task's share: with nothing to spill it could only fail, so it
            // gets one batch, spills it when refused next, and asks again from nothing).
            let (spare, missing) = (s.held.saturating_sub(s.used), additional - granted);
            let may_use_headroom = !reservation.consumer().can_spill() || reservation.size() == 0;
            let from_spare = missing <= spare.saturating_sub(self.headroom)
                || (may_use_headroom && missing <= spare && reservation.size() + additional <= self.headroom);
            if !from_spare {
                drop(s);
                if granted > 0 {
                    self.broker.release(granted);
                }
                return Err(DataFusionError::ResourcesExhausted(format!(
                    "Spark's memory manager granted {granted} of {additional} bytes requested by {} \
                     ({} bytes reserved by this task's native plan); raise spark.memory.offHeap.size for more \
                     memory per task",
                    reservation.consumer().name(),
                    self.reserved()
                )));
            }
        }
        s.used += additional;
        s.held += granted;
        self.note_peak(s.used);
        Ok(())
    }

    fn reserved(&self) -> usize {
        self.state.lock().unwrap().used
    }

    fn memory_limit(&self) -> MemoryLimit {
        MemoryLimit::Unknown
    }
}

impl Drop for BrokerMemoryPool {
    /// Whatever is still held goes back to Spark, even when a plan is dropped mid-stream (task killed).
    fn drop(&mut self) {
        let held = std::mem::take(&mut self.state.get_mut().unwrap().held);
        if held > 0 {
            self.broker.release(held);
        }
    }
}

/// A stand-in for Spark's memory manager with a fixed budget, for tests and benchmarks without a JVM.
#[derive(Debug)]
pub struct FixedBroker {
    limit: usize,
    used: AtomicUsize,
    peak: AtomicUsize,
}

impl FixedBroker {
    pub fn new(limit: usize) -> Self {
        Self { limit, used: AtomicUsize::new(0), peak: AtomicUsize::new(0) }
    }
    pub fn used(&self) -> usize {
        self.used.load(Ordering::SeqCst)
    }
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }
}

impl MemoryBroker for FixedBroker {
    fn acquire(&self, bytes: usize) -> Result<usize> {
        let mut cur = self.used.load(Ordering::SeqCst);
        loop {
            let granted = bytes.min(self.limit.saturating_sub(cur));
            match self.used.compare_exchange(cur, cur + granted, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => {
                    self.peak.fetch_max(cur + granted, Ordering::SeqCst);
                    return Ok(granted);
                }
                Err(actual) => cur = actual,
            }
        }
    }

    fn release(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion_execution::memory_pool::MemoryConsumer;

    #[test]
    fn refusal_is_resources_exhausted_and_everything_is_returned() {
        let broker = Arc::new(FixedBroker::new(1000));
        let pool: Arc<dyn MemoryPool> = Arc::new(BrokerMemoryPool::new(broker.clone()));
        let r = MemoryConsumer::new("test").register(&pool);
        r.try_grow(600).unwrap();
        assert_eq!(broker.used(), 600);
        let err = r.try_grow(600).unwrap_err();
        assert!(matches!(err, DataFusionError::ResourcesExhausted(_)), "{err}");
        // The partial grant of 400 bytes was given back.
        assert_eq!(broker.used(), 600);
        r.shrink(100);
        assert_eq!(broker.used(), 500);
        drop(r);
        assert_eq!(broker.used(), 0);
        assert_eq!(pool.reserved(), 0);
    }

    #[test]
    fn infallible_grow_over_budget_is_tracked_and_released() {
        let broker = Arc::new(FixedBroker::new(100));
        let pool: Arc<dyn MemoryPool> = Arc::new(BrokerMemoryPool::new(broker.clone()));
        let r = MemoryConsumer::new("test").register(&pool);
        r.grow(150);
        assert_eq!(pool.reserved(), 150);
        assert_eq!(broker.used(), 100);
        r.shrink(100);
        assert_eq!(broker.used(), 50);
        drop(r);
        assert_eq!(broker.used(), 0);
    }

    #[test]
    fn memory_handed_over_between_consumers_stays_in_the_pool() {
        // A broker whose free memory another task takes as soon as it is given back.
        #[derive(Debug)]
        struct Greedy(FixedBroker, std::sync::atomic::AtomicBool);
        impl MemoryBroker for Greedy {
            fn acquire(&self, bytes: usize) -> Result<usize> {
                if self.1.load(Ordering::SeqCst) {
                    return Ok(0);
                }
                self.0.acquire(bytes)
            }
            fn release(&self, bytes: usize) {
                self.0.release(bytes)
            }
        }
        let broker = Arc::new(Greedy(FixedBroker::new(10_000), Default::default()));
        let pool: Arc<dyn MemoryPool> = Arc::new(BrokerMemoryPool::with_headroom(broker.clone(), 100));
        let sorter = MemoryConsumer::new("sorter").with_can_spill(true).register(&pool);
        let merge = MemoryConsumer::new("merge").register(&pool);
        sorter.try_grow(5000).unwrap();
        merge.try_grow(2000).unwrap();
        broker.1.store(true, Ordering::SeqCst); // from now on Spark refuses everything
        for _ in 0..50 {
            sorter.shrink(100);
            merge.try_grow(100).unwrap();
        }
        assert_eq!((sorter.size(), merge.size()), (0, 7000));
        // The float is used up; only the headroom is left, and not beyond its size.
        assert!(MemoryConsumer::new("other").with_can_spill(true).register(&pool).try_grow(101).is_err());
        drop((sorter, merge));
        drop(pool);
        assert_eq!(broker.0.used(), 0);
    }

    #[test]
    fn headroom_serves_only_small_consumers_that_cannot_spill() {
        let broker = Arc::new(FixedBroker::new(1000));
        let pool: Arc<dyn MemoryPool> = Arc::new(BrokerMemoryPool::with_headroom(broker.clone(), 100));
        assert_eq!(broker.used(), 100, "the headroom is held up front");
        let join = MemoryConsumer::new("join").with_can_spill(true).register(&pool);
        let agg = MemoryConsumer::new("agg").register(&pool);
        let merge = MemoryConsumer::new("merge").register(&pool);
        // The spilling consumer takes everything the broker grants, and not the headroom once it holds memory.
        join.try_grow(900).unwrap();
        assert!(join.try_grow(1).is_err());
        // A consumer that cannot spill still gets its state, from the headroom ...
        agg.try_grow(80).unwrap();
        // ... but none beyond the headroom's size, nor what another one already took.
        assert!(merge.try_grow(40).is_err());
        assert!(agg.try_grow(40).is_err());
        assert_eq!((pool.reserved(), broker.used()), (980, 1000));
        // Memory given back refills the headroom, then the float, first.
        join.shrink(500);
        assert_eq!(broker.used(), 680, "80 reserved by agg, 400 by join, 100 of headroom, 100 of float");
        merge.try_grow(40).unwrap();
        drop((join, agg, merge));
        assert_eq!(pool.reserved(), 0);
        assert_eq!(broker.used(), 200, "the headroom and the float are kept while the pool lives");
        drop(pool);
        assert_eq!(broker.used(), 0);
    }

    #[test]
    fn a_spilling_consumer_holding_nothing_gets_one_batch_from_the_headroom() {
        let broker = Arc::new(FixedBroker::new(1000));
        let pool: Arc<dyn MemoryPool> = Arc::new(BrokerMemoryPool::with_headroom(broker.clone(), 100));
        let join = MemoryConsumer::new("join").with_can_spill(true).register(&pool);
        let sort = MemoryConsumer::new("sort").with_can_spill(true).register(&pool);
        join.try_grow(900).unwrap();
        // The sort above holds nothing it could spill: its first batch comes from the headroom ...
        sort.try_grow(60).unwrap();
        // ... its next one does not (it spills the first, then asks again from nothing).
        assert!(sort.try_grow(30).is_err());
        sort.shrink(60);
        sort.try_grow(90).unwrap();
        // Never more than the headroom's size.
        sort.shrink(90);
        assert!(sort.try_grow(101).is_err());
        assert_eq!((pool.reserved(), broker.used()), (900, 1000));
    }

    #[test]
    fn headroom_and_float_are_sized_separately_and_capped_by_the_grant() {
        let broker = Arc::new(FixedBroker::new(10_000));
        let pool: Arc<dyn MemoryPool> = Arc::new(BrokerMemoryPool::with_headroom_and_float(broker.clone(), 100, 300));
        assert_eq!(broker.used(), 100, "only the headroom is held up front");
        let sort = MemoryConsumer::new("sort").with_can_spill(true).register(&pool);
        sort.try_grow(2000).unwrap();
        sort.shrink(2000);
        assert_eq!(broker.used(), 400, "the headroom and a float of 300 stay");
        // No headroom: a consumer that cannot spill gets nothing once the broker refuses.
        let none = Arc::new(FixedBroker::new(1000));
        let pool0: Arc<dyn MemoryPool> = Arc::new(BrokerMemoryPool::with_headroom_and_float(none.clone(), 0, 0));
        assert_eq!(none.used(), 0);
        let join = MemoryConsumer::new("join").with_can_spill(true).register(&pool0);
        let agg = MemoryConsumer::new("agg").register(&pool0);
        join.try_grow(1000).unwrap();
        assert!(agg.try_grow(1).is_err());
        join.shrink(1000);
        assert_eq!(none.used(), 0, "nothing kept");
        // A small task keeps at most an eighth of its grant as either.
        let small = Arc::new(FixedBroker::new(800));
        let pool_s = BrokerMemoryPool::with_headroom_and_float(small.clone(), 1000, 4000);
        assert_eq!((small.used(), pool_s.headroom, pool_s.retain), (100, 100, 200));
        drop((sort, join, agg, pool_s));
        drop((pool, pool0));
        assert_eq!((broker.used(), none.used(), small.used()), (0, 0, 0));
    }
}
