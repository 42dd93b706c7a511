//! Native memory under Spark's memory manager.
//!
//! [`BrokerMemoryPool`] is the DataFusion `MemoryPool` of one native plan (one Spark task). Every reservation an
//! operator grows is asked of a [`MemoryBroker`]: in production the JNI bridge implements it over a JVM
//! `MemoryConsumer` in OFF_HEAP mode, so the bytes come out of Spark's `TaskMemoryManager` like any Spark
//! operator's; in tests a [`FixedBroker`] plays Spark with a fixed budget. A refusal (Spark granting less than
//! asked) makes `try_grow` fail with `ResourcesExhausted`, which DataFusion's spilling operators answer by spilling.
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

/// A DataFusion memory pool that forwards every byte to a [`MemoryBroker`].
#[derive(Debug)]
pub struct BrokerMemoryPool {
    broker: Arc<dyn MemoryBroker>,
    state: Mutex<PoolState>,
    peak: AtomicUsize,
}

#[derive(Debug, Default)]
struct PoolState {
    /// Bytes reserved by operators.
    used: usize,
    /// Bytes held from the broker. Below `used` only after an infallible `grow` that the broker could not meet.
    held: usize,
}

impl BrokerMemoryPool {
    pub fn new(broker: Arc<dyn MemoryBroker>) -> Self {
        Self { broker, state: Mutex::new(PoolState::default()), peak: AtomicUsize::new(0) }
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
    }

    fn shrink(&self, _reservation: &MemoryReservation, shrink: usize) {
        let mut s = self.state.lock().unwrap();
        s.used = s.used.saturating_sub(shrink);
        if s.held > s.used {
            let give_back = s.held - s.used;
            s.held = s.used;
            drop(s);
            self.broker.release(give_back);
        }
    }

    fn try_grow(&self, reservation: &MemoryReservation, additional: usize) -> Result<()> {
        if additional == 0 {
            return Ok(()); // Spark's TaskMemoryManager asserts on requests of 0 bytes
        }
        let granted = self.broker.acquire(additional)?;
        if granted < additional {
            if granted > 0 {
                self.broker.release(granted);
            }
            return Err(DataFusionError::ResourcesExhausted(format!(
                "Spark's memory manager granted {granted} of {additional} bytes requested by {} \
                 ({} bytes reserved by this task's native plan)",
                reservation.consumer().name(),
                self.reserved()
            )));
        }
        let mut s = self.state.lock().unwrap();
        s.used += additional;
        s.held += additional;
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
}
