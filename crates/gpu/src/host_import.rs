//! Host memory the GPU copies into and out of directly (Vulkan's `VK_EXT_external_memory_host`).
//!
//! A readback through staging costs two trips over the data: the GPU copies into mapped staging,
//! then the host copies staging into the destination. Imported, the destination itself (a
//! `Vec`'s pages) becomes a buffer the GPU copies into, so the bus's DMA writes the result where
//! the caller wants it and no host thread touches it. The same holds for uploads from a host
//! slice. Only where the device was opened with the extension (see [`open_device`]); elsewhere
//! callers keep the staging path.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use ash::vk;
use wgpu::hal::api::Vulkan;

/// Opens `adapter`'s device with `VK_EXT_external_memory_host` enabled, where the adapter is a
/// Vulkan one that supports it; `None` otherwise (the caller opens the device as usual).
pub(crate) fn open_device(adapter: &wgpu::Adapter, desc: &wgpu::DeviceDescriptor<'_>) -> Option<Result<(wgpu::Device, wgpu::Queue), wgpu::RequestDeviceError>> {
    if std::env::var("WHIR_HOST_IMPORT").is_ok_and(|v| v.trim() == "0") {
        return None;
    }
    // SAFETY: the hal adapter is only used to open a device, with wgpu's own features and
    // limits plus one extension the adapter reports.
    let open = unsafe {
        let hal = adapter.as_hal::<Vulkan>()?;
        if !hal.physical_device_capabilities().supports_extension(ash::ext::external_memory_host::NAME) {
            return None;
        }
        hal.open_with_callback(
            desc.required_features,
            &desc.required_limits,
            &desc.memory_hints,
            Some(Box::new(|args: wgpu::hal::vulkan::CreateDeviceCallbackArgs<'_, '_, '_>| {
                if !args.extensions.contains(&ash::ext::external_memory_host::NAME) {
                    args.extensions.push(ash::ext::external_memory_host::NAME);
                }
            })),
        )
    };
    let open = match open {
        Ok(open) => open,
        Err(e) => {
            tracing::warn!("opening the device with host import failed ({e}); opening it without");
            return None;
        }
    };
    // SAFETY: `open` comes from this adapter, with `desc`'s features.
    Some(unsafe { adapter.create_device_from_hal(open, desc) })
}

/// Imports host memory into buffers of one device. Made only for a Vulkan device opened by
/// [`open_device`] with the extension.
pub struct HostImporter {
    device: ash::Device,
    pointer_properties: vk::PFN_vkGetMemoryHostPointerPropertiesEXT,
    /// `minImportedHostPointerAlignment`: imported ranges start and end on it.
    alignment: usize,
    memory_types: Vec<vk::MemoryType>,
}

impl std::fmt::Debug for HostImporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostImporter").field("alignment", &self.alignment).finish()
    }
}

impl HostImporter {
    /// `None` unless `device` is a Vulkan device with `VK_EXT_external_memory_host` enabled.
    pub fn new(device: &wgpu::Device) -> Option<Self> {
        // SAFETY: the raw handles are only used for the extension's own calls and to create
        // and free buffers and memory this importer owns.
        unsafe {
            let hal = device.as_hal::<Vulkan>()?;
            if !hal.enabled_device_extensions().contains(&ash::ext::external_memory_host::NAME) {
                return None;
            }
            let instance = hal.shared_instance().raw_instance();
            let physical = hal.raw_physical_device();
            let raw = hal.raw_device().clone();
            let mut host = vk::PhysicalDeviceExternalMemoryHostPropertiesEXT::default();
            let mut props = vk::PhysicalDeviceProperties2::default().push_next(&mut host);
            instance.get_physical_device_properties2(physical, &mut props);
            let alignment = host.min_imported_host_pointer_alignment as usize;
            if alignment == 0 || !alignment.is_power_of_two() {
                return None;
            }
            let memory = instance.get_physical_device_memory_properties(physical);
            let memory_types = memory.memory_types[..memory.memory_type_count as usize].to_vec();
            let ext = ash::ext::external_memory_host::Device::new(instance, &raw);
            Some(Self { pointer_properties: ext.fp().get_memory_host_pointer_properties_ext, device: raw, alignment, memory_types })
        }
    }

    /// Imported ranges start and end on multiples of this many bytes.
    pub fn alignment(&self) -> usize {
        self.alignment
    }

    /// The largest aligned range inside `ptr .. ptr + len`: (offset from `ptr`, length), or
    /// `None` if none is at least one alignment long.
    pub fn aligned_inside(&self, ptr: *const u8, len: usize) -> Option<(usize, usize)> {
        let start = (ptr as usize).next_multiple_of(self.alignment);
        let end = (ptr as usize + len) / self.alignment * self.alignment;
        (end > start).then(|| (start - ptr as usize, end - start))
    }

    /// A buffer over the host bytes `ptr .. ptr + len` (both on [`alignment`](Self::alignment)),
    /// usable as a copy source and destination.
    ///
    /// # Safety
    /// The bytes must stay allocated, and not be read or written by the host while the GPU may
    /// copy into or out of them, until [`ImportedHost::release`] returns.
    pub unsafe fn import(&self, wgpu_device: &wgpu::Device, ptr: *mut u8, len: usize) -> Result<ImportedHost, String> {
        if len == 0 || !(ptr as usize).is_multiple_of(self.alignment) || !len.is_multiple_of(self.alignment) {
            return Err(format!("host range {ptr:?} + {len} is not on the {}-byte import alignment", self.alignment));
        }
        let handle_type = vk::ExternalMemoryHandleTypeFlags::HOST_ALLOCATION_EXT;
        let device = &self.device;
        let mut pointer = vk::MemoryHostPointerPropertiesEXT::default();
        let r = (self.pointer_properties)(device.handle(), handle_type, ptr as *const c_void, &mut pointer);
        if r != vk::Result::SUCCESS {
            return Err(format!("vkGetMemoryHostPointerPropertiesEXT: {r}"));
        }
        let mut external = vk::ExternalMemoryBufferCreateInfo::default().handle_types(handle_type);
        let info = vk::BufferCreateInfo::default()
            .size(len as u64)
            .usage(vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST)
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .push_next(&mut external);
        let buffer = device.create_buffer(&info, None).map_err(|e| format!("vkCreateBuffer: {e}"))?;
        let needs = device.get_buffer_memory_requirements(buffer);
        let allowed = needs.memory_type_bits & pointer.memory_type_bits;
        // Host-visible and cached if offered (the host reads the result afterwards).
        let pick = |flags: vk::MemoryPropertyFlags| (0..self.memory_types.len()).find(|&i| allowed & (1 << i) != 0 && self.memory_types[i].property_flags.contains(flags));
        let Some(type_index) = pick(vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_CACHED).or_else(|| pick(vk::MemoryPropertyFlags::empty())) else {
            device.destroy_buffer(buffer, None);
            return Err(format!("no memory type can import host memory for a buffer (buffer types {:#x}, host pointer types {:#x})", needs.memory_type_bits, pointer.memory_type_bits));
        };
        let mut import = vk::ImportMemoryHostPointerInfoEXT::default().handle_type(handle_type).host_pointer(ptr.cast());
        let alloc = vk::MemoryAllocateInfo::default().allocation_size(len as u64).memory_type_index(type_index as u32).push_next(&mut import);
        let memory = match device.allocate_memory(&alloc, None) {
            Ok(m) => m,
            Err(e) => {
                device.destroy_buffer(buffer, None);
                return Err(format!("importing {len} bytes of host memory: {e}"));
            }
        };
        if let Err(e) = device.bind_buffer_memory(buffer, memory, 0) {
            device.destroy_buffer(buffer, None);
            device.free_memory(memory, None);
            return Err(format!("vkBindBufferMemory: {e}"));
        }
        let freed = Arc::new(AtomicBool::new(false));
        let (owner, flag) = (device.clone(), freed.clone());
        let hal = wgpu::hal::vulkan::Buffer::from_raw_externally_owned(
            buffer,
            Box::new(move || {
                owner.destroy_buffer(buffer, None);
                owner.free_memory(memory, None);
                flag.store(true, Ordering::Release);
            }),
        );
        let buffer = wgpu_device.create_buffer_from_hal::<Vulkan>(
            hal,
            &wgpu::BufferDescriptor { label: Some("imported host memory"), size: len as u64, usage: wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false },
        );
        Ok(ImportedHost { buffer, freed })
    }
}

/// Host memory imported as a GPU buffer (see [`HostImporter::import`]).
#[derive(Debug)]
pub struct ImportedHost {
    buffer: wgpu::Buffer,
    freed: Arc<AtomicBool>,
}

impl ImportedHost {
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    /// Frees the import once the GPU is done with it; waits for the device until it is. After
    /// this returns, the host memory is the caller's alone again. `false` if the device did not
    /// let the import go (the caller must then not free or reuse the memory).
    pub fn release(self, device: &wgpu::Device) -> bool {
        self.buffer.destroy();
        drop(self.buffer);
        for _ in 0..4 {
            if self.freed.load(Ordering::Acquire) {
                return true;
            }
            let _ = device.poll(wgpu::PollType::wait_indefinitely());
        }
        self.freed.load(Ordering::Acquire)
    }
}
