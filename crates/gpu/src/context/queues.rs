//! Several queues of one device, a wgpu `Device` each ([`GpuContext::on_queues`]).
//!
//! wgpu opens one queue per device, and work on one queue runs in its order: a barrier between
//! two dispatches of one proof waits for every dispatch submitted before it, other proofs'
//! included. Vulkan devices offer several queues; wgpu-hal can wrap any queue of a `VkDevice`
//! we open ourselves, so each context here is a wgpu device of its own over the same
//! `VkDevice`, on a queue of its own.

/// `count` queues of `adapter`'s device, a wgpu device each: several only on Vulkan; one
/// elsewhere, through wgpu's own device request. `compute_only`: in a queue family without
/// graphics where the adapter has one (Vulkan only; elsewhere and without one, as usual).
pub(super) fn open_queues(
    adapter: &wgpu::Adapter,
    desc: &wgpu::DeviceDescriptor<'static>,
    count: usize,
    compute_only: bool,
) -> Result<Vec<(wgpu::Device, wgpu::Queue)>, String> {
    #[cfg(any(windows, target_os = "linux", target_os = "android"))]
    if let Some(opened) = vulkan::open_queues(adapter, desc, count, compute_only) {
        return opened;
    }
    if count != 1 {
        return Err(format!(
            "{count} queues need a Vulkan adapter, and this one is {:?}; use one context per proof stream instead",
            adapter.get_info().backend
        ));
    }
    pollster::block_on(adapter.request_device(desc)).map(|dq| vec![dq]).map_err(|e| e.to_string())
}

#[cfg(any(windows, target_os = "linux", target_os = "android"))]
mod vulkan {
    use std::sync::Arc;

    use ash::vk;
    use wgpu::hal::api::Vulkan;

    /// The `VkDevice` the contexts share: destroyed when the last wgpu device over it is
    /// (each holds a clone in its drop callback, which wgpu-hal runs after the device's own
    /// clean-up).
    struct SharedDevice(ash::Device);

    impl Drop for SharedDevice {
        fn drop(&mut self) {
            // SAFETY: every wgpu-hal device over it has been dropped (this is the last
            // reference), and nothing else uses it.
            unsafe { self.0.destroy_device(None) };
        }
    }

    /// The queues on one `VkDevice` we open; None where `adapter` is not a Vulkan one.
    pub(super) fn open_queues(
        adapter: &wgpu::Adapter,
        desc: &wgpu::DeviceDescriptor<'static>,
        count: usize,
        compute_only: bool,
    ) -> Option<Result<Vec<(wgpu::Device, wgpu::Queue)>, String>> {
        // SAFETY: the hal adapter is only read here, and outlives this call with `adapter`.
        let hal = unsafe { adapter.as_hal::<Vulkan>() }?;
        Some(open_on(&hal, adapter, desc, count, compute_only))
    }

    fn open_on(
        hal: &wgpu::hal::vulkan::Adapter,
        adapter: &wgpu::Adapter,
        desc: &wgpu::DeviceDescriptor<'static>,
        count: usize,
        compute_only: bool,
    ) -> Result<Vec<(wgpu::Device, wgpu::Queue)>, String> {
        let instance = hal.shared_instance().raw_instance();
        let physical = hal.raw_physical_device();
        // SAFETY: `physical` is this instance's.
        let families = unsafe { instance.get_physical_device_queue_family_properties(physical) };
        // wgpu-hal opens its queue in family 0 (graphics and compute). A family with compute
        // but not graphics is preferred where asked for: its queues overlap each other's work,
        // while those of family 0 run one at a time (BENCHMARKS.md). Only on NVIDIA's driver,
        // where it was measured: wgpu-hal assumes a graphics family, and its buffer barriers
        // name vertex and fragment stages, which NVIDIA accepts on a compute-only queue (the
        // Vulkan spec does not promise that). And only where that family has the queues asked
        // for and timestamps as good as family 0's (wgpu-hal enables timestamp queries from
        // family 0's bits).
        let ts_bits = |f: &vk::QueueFamilyProperties| f.timestamp_valid_bits;
        let main_bits = families.first().map_or(0, ts_bits);
        let nvidia = adapter.get_info().vendor == 0x10de;
        let compute_family = families.iter().position(|f| {
            f.queue_flags.contains(vk::QueueFlags::COMPUTE)
                && !f.queue_flags.contains(vk::QueueFlags::GRAPHICS)
                && f.queue_count as usize >= count
                && ts_bits(f) >= main_bits
        });
        let chosen = compute_family.filter(|_| compute_only && nvidia).unwrap_or(0);
        let fewer = families
            .iter()
            .find(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE) && !f.queue_flags.contains(vk::QueueFlags::GRAPHICS) && (f.queue_count as usize) < count);
        if let (Some(f), true, 0) = (fewer, compute_only && nvidia, chosen) {
            tracing::warn!("{count} queues asked for and the compute-only queue family offers {}: opening them in the graphics family, whose queues ran one at a time on the H200 (ask for at most {})", f.queue_count, f.queue_count);
        }
        let family = chosen as u32;
        let offered = families.get(chosen).filter(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE)).map_or(0, |f| f.queue_count as usize);
        if offered < count {
            let hint = if offered <= 1 && chosen == 0 { "; a context opened as usual already has its one queue" } else { "" };
            return Err(format!("{count} queues asked for, and the adapter's queue family {family} offers {offered}; ask for at most {offered}{hint}"));
        }
        tracing::info!(count, family, flags = ?families[chosen].queue_flags, "opening queues of one device");
        let features = desc.required_features;
        let extensions = hal.required_device_extensions(features);
        let mut device_features = hal.physical_device_features(&extensions, features);
        let priorities = vec![1.0f32; count];
        let queue_info = vk::DeviceQueueCreateInfo::default().queue_family_index(family).queue_priorities(&priorities);
        let names: Vec<*const std::ffi::c_char> = extensions.iter().map(|e| e.as_ptr()).collect();
        let info = vk::DeviceCreateInfo::default().queue_create_infos(std::slice::from_ref(&queue_info)).enabled_extension_names(&names);
        let info = device_features.add_to_device_create(info);
        // SAFETY: the create info holds the extensions and features wgpu-hal requires for
        // `features`, as its own `open` builds them, and queues the family offers.
        let raw = unsafe { instance.create_device(physical, &info, None) }.map_err(|e| format!("vkCreateDevice with {count} queues: {e}"))?;
        let shared = Arc::new(SharedDevice(raw.clone()));
        let mut opened = Vec::with_capacity(count);
        for queue in 0..count {
            let keep = shared.clone();
            // SAFETY: `raw` was created from this adapter with `family`, wgpu-hal's required
            // extensions and features; `keep` holds it until wgpu-hal drops this device.
            let open = unsafe {
                hal.device_from_raw(
                    raw.clone(),
                    Some(Box::new(move || drop(keep))),
                    &extensions,
                    features,
                    &desc.required_limits,
                    &desc.memory_hints,
                    family,
                    queue as u32,
                )
            }
            .map_err(|e| format!("wrapping queue {queue} of {count}: {e}"))?;
            // SAFETY: `open` was made from this adapter's hal adapter, with `desc`'s features.
            let pair = unsafe { adapter.create_device_from_hal(open, desc) }.map_err(|e| format!("wgpu device over queue {queue} of {count}: {e}"))?;
            opened.push(pair);
        }
        Ok(opened)
    }
}
