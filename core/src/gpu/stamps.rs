//! Two device timestamps around one kernel that taks dispatches through wgpu itself
//! ([`super::direct`]), for the per-op clock ([`super::clock`]).
//!
//! Why: the clock times the launches cubecl makes; a kernel dispatched directly (the kernel
//! on cooperative matrices taks compiles for Vulkan, every kernel of taks's on burn's
//! SPIR-V or MSL compiler) never reaches cubecl, and would be missing from the very table
//! meant to show it. Its compute pass writes a timestamp at its start and end (wgpu's
//! `TIMESTAMP_QUERY`), resolved into a buffer the host reads once the clocked work is over,
//! so nothing waits between kernels. The two come from the device's own counter, so their
//! difference is the kernel's device time; they are not placed on cubecl's timeline
//! (cubecl keeps its own origin private), which the clock's report says.

use burn::backend::wgpu::wgpu;

/// The two timestamps of one dispatch, until read.
pub(crate) struct Stamps {
    device: wgpu::Device,
    queries: wgpu::QuerySet,
    resolved: wgpu::Buffer,
    readable: wgpu::Buffer,
    /// Nanoseconds per tick of the device's counter.
    period: f32,
}

/// Bytes of the two timestamps.
const BYTES: u64 = 2 * wgpu::QUERY_SIZE as u64;

impl Stamps {
    /// Fresh ones on `device`; `None` where it has no timestamp queries.
    pub(crate) fn new(device: &wgpu::Device, queue: &wgpu::Queue) -> Option<Self> {
        if !device.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
            return None;
        }
        let buffer = |usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("taks timestamps"),
                size: BYTES,
                usage,
                mapped_at_creation: false,
            })
        };
        Some(Self {
            device: device.clone(),
            queries: device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("taks timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: 2,
            }),
            resolved: buffer(wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC),
            readable: buffer(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST),
            period: queue.get_timestamp_period(),
        })
    }

    /// What the compute pass writes: a timestamp at its beginning and at its end.
    pub(crate) fn writes(&self) -> wgpu::ComputePassTimestampWrites<'_> {
        wgpu::ComputePassTimestampWrites {
            query_set: &self.queries,
            beginning_of_pass_write_index: Some(0),
            end_of_pass_write_index: Some(1),
        }
    }

    /// Record, after the pass, the copy of the two into the buffer the host reads.
    pub(crate) fn resolve(&self, encoder: &mut wgpu::CommandEncoder) {
        encoder.resolve_query_set(&self.queries, 0..2, &self.resolved, 0);
        encoder.copy_buffer_to_buffer(&self.resolved, 0, &self.readable, 0, BYTES);
    }

    /// The kernel's device seconds, once its submission has run (this waits for it);
    /// `None` where the device answered nothing usable (a reset counter, a lost device).
    pub(crate) fn seconds(self) -> Option<f64> {
        let slice = self.readable.slice(..);
        let (mapped, answer) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |done| {
            let _ = mapped.send(done.is_ok());
        });
        self.device
            .poll(wgpu::PollType::Wait {
                submission_index: None,
                timeout: None,
            })
            .ok()?;
        if answer.recv() != Ok(true) {
            return None;
        }
        let [start, end] = {
            let bytes = slice.get_mapped_range().ok()?;
            let tick = |i: usize| u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().unwrap());
            [tick(0), tick(1)]
        };
        self.readable.unmap();
        (end > start).then(|| (end - start) as f64 * self.period as f64 * 1e-9)
    }
}
