// The WebGPU shim: the engine's webgpu backend (src/fucina/backend/webgpu/gpu.cpp) calls these
// methods through Module.fucinaGpu. It owns the GPUDevice and every object made on it, on the JS
// thread that made it (Note [Device reads] in docs/design-notes.md): buffers by id, pipelines
// from WGSL, dispatches, and the reads, which are asynchronous and only ever started from JS
// (`await t.data()`). Dispatches are batched (Note [Dispatch batches]): one compute pass and one
// submit per batch, each dispatch's uniforms in its own slot of a ring written just before.
import { FucinaError } from './errors.mjs';

// GPUBufferUsage and GPUMapMode: numbers, so Node needs none of the webgpu package's globals.
const STORAGE = 0x80, UNIFORM = 0x40, COPY_SRC = 0x04, COPY_DST = 0x08, MAP_READ = 0x01, MAP_MODE_READ = 0x1;
const UNIFORM_BYTES = 1024;  // gpu.h: Gpu::kUniformBytes
const BATCH = 64;            // dispatches per submit at most (the uniform ring's slots)
const FAULT_BYTES = 16;      // gpu.h: Gpu::faultBuffer

export class GpuShim {
  #device;
  #buffers = new Map();  // id -> GPUBuffer
  #pipelines = [];       // id - 1 -> { pipeline, layout }
  #nextBuffer = 1;
  #uniforms;             // the ring: BATCH slots of UNIFORM_BYTES
  #staged = new Uint32Array(BATCH * UNIFORM_BYTES / 4);
  #encoder = null;       // the open batch: its encoder, its compute pass, its slots used
  #pass = null;
  #slots = 0;
  #errors = [];
  #faultId;
  // Note [Device limits]: the bytes of the buffers createBuffer made (pooled ones too), capped by
  // limits.memory; a buffer the device reported out of memory (its bytes, for the next check) and
  // the ids whose buffer is invalid for it, made anew when next used; the scopes not yet popped.
  #bytes = 0;
  #outOfMemory = null;
  #invalid = new Set();
  #pops = new Set();
  /** What the engine may use: the device's limits, lowered by init's deviceLimits (Note [Device
   * limits]). memory: bytes of buffers alive at once (Infinity: as many as the device gives). */
  limits;
  lost = null;           // the GPUDeviceLostInfo's message once the device is lost
  onLost = null;         // the facade's: falls back to the cpu
  downloadedBytes = 0;
  submits = 0;           // command buffers submitted (a batch of dispatches, a read, a sync)

  #keep;  // the GPU and adapter: Dawn's Node binding tears the device down when they are collected

  constructor(device, keep = null, caps = {}) {
    this.#device = device;
    this.#keep = keep;
    const cap = (name) => Math.min(device.limits[name], caps[name] ?? Infinity);
    this.limits = {
      maxBufferSize: cap('maxBufferSize'),
      maxStorageBufferBindingSize: cap('maxStorageBufferBindingSize'),
      memory: caps.memory ?? Infinity,
    };
    this.#uniforms = device.createBuffer({ size: BATCH * UNIFORM_BYTES, usage: UNIFORM | COPY_DST });
    // Note [Device faults]: [flag, first position, extent, 0], set by the engine's check kernels.
    this.#faultId = this.#nextBuffer++;
    this.#buffers.set(this.#faultId, device.createBuffer({ size: FAULT_BYTES, usage: STORAGE | COPY_SRC | COPY_DST }));
    this.#clearFault();
    device.addEventListener?.('uncapturederror', (e) => this.#errors.push(e.error?.message ?? String(e)));
    device.lost?.then((info) => {
      this.lost = info?.message || info?.reason || 'the device was lost';
      this.onLost?.(this.lost);
    });
  }

  /** A device from a GPU (navigator.gpu, or the npm package webgpu's create([])), with the
   * adapter's own buffer limits rather than WebGPU's defaults, lowered by caps (init's
   * deviceLimits) to run as on a smaller GPU. */
  static async create(gpu, caps = {}) {
    const adapter = await gpu.requestAdapter();
    if (!adapter) throw new FucinaError('DeviceUnavailable', 'DeviceUnavailable: no WebGPU adapter (the GPU is not available to this page or process)');
    const { maxBufferSize, maxStorageBufferBindingSize } = adapter.limits;
    let device;
    try {
      device = await adapter.requestDevice({ requiredLimits: { maxBufferSize, maxStorageBufferBindingSize } });
    } catch (e) {
      throw new FucinaError('DeviceUnavailable', `DeviceUnavailable: the adapter gave no device (${e?.message ?? e})`);
    }
    return new GpuShim(device, { gpu, adapter }, caps);
  }

  // ---- called by the engine (synchronously, on this thread). None of them throws: a JS
  // exception must not cross the engine's C++ frames (web/bindings.cpp), so a failure is kept
  // and reported by the next sync() or data(), as WebGPU reports its own errors.
  #guard(fn, failed) {
    try {
      return fn();
    } catch (e) {
      this.#errors.push(e?.message ?? String(e));
      return failed;
    }
  }
  // 0 past the budget: the engine trims its pool of buffers, asks once more, then the op is
  // OutOfMemory.
  createBuffer(bytes) {
    const size = Math.max(4, Math.ceil(bytes / 4) * 4);
    if (this.lost || bytes > this.limits.maxBufferSize || this.#bytes + size > this.limits.memory) return 0;
    return this.#guard(() => {
      const id = this.#nextBuffer++;
      this.#buffers.set(id, this.#allocate(id, size));
      this.#bytes += size;
      return id;
    }, 0);
  }
  // WebGPU does not throw when it has no memory: it gives an invalid buffer and reports the error
  // to an error scope, later.
  #allocate(id, size) {
    const device = this.#device;
    device.pushErrorScope('out-of-memory');
    let buffer;
    try {
      buffer = device.createBuffer({ size, usage: STORAGE | COPY_SRC | COPY_DST });
    } finally {
      const pop = device.popErrorScope().then((error) => {
        if (!error) return;
        this.#outOfMemory ??= size;
        if (this.#buffers.get(id) === buffer) this.#invalid.add(id);
      }, () => {}).finally(() => this.#pops.delete(pop));
      this.#pops.add(pop);
    }
    return buffer;
  }
  destroyBuffer(id) {
    const buffer = this.#buffers.get(id);
    this.#guard(() => {
      this.#flush();  // the batch may use it
      buffer?.destroy();
    });
    this.#bytes -= buffer?.size ?? 0;
    this.#buffers.delete(id);
    this.#invalid.delete(id);
  }
  write(id, offset, view) {
    if (this.lost) return;
    // A view of the threaded build's shared memory is copied first: Dawn's Node binding does not
    // take a SharedArrayBuffer.
    this.#guard(() => {
      const data = view.buffer instanceof ArrayBuffer ? view : view.slice();
      this.#flush();  // the batch's dispatches see the buffer as it was
      this.#device.queue.writeBuffer(this.#buffer(id), offset, data, 0, data.byteLength);
    });
  }
  faultBuffer() { return this.#faultId; }
  bindingLimit() { return this.limits.maxStorageBufferBindingSize; }
  pipeline(wgsl) {
    return this.#guard(() => {
      const module = this.#device.createShaderModule({ code: wgsl });
      const pipeline = this.#device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' } });
      this.#pipelines.push({ pipeline, layout: pipeline.getBindGroupLayout(0) });
      return this.#pipelines.length;
    }, 0);
  }
  // windows: [offset, size] in bytes per buffer, a size of 0 binding the whole buffer (Note
  // [Bound in pieces]); absent, every buffer is bound whole.
  dispatch(pipelineId, bufferIds, uniforms, x, y, z, windows) {
    if (this.lost || pipelineId === 0) return;
    this.#guard(() => this.#dispatch(pipelineId, bufferIds, uniforms, x, y, z, windows));
  }
  #dispatch(pipelineId, bufferIds, uniforms, x, y, z, windows) {
    const { pipeline, layout } = this.#pipelines[pipelineId - 1];
    const device = this.#device;
    if (this.#slots === BATCH) this.#flush();
    if (!this.#encoder) {
      this.#encoder = device.createCommandEncoder();
      this.#pass = this.#encoder.beginComputePass();
      // Submitted by the end of the task that issued it, if nothing flushes it sooner.
      queueMicrotask(() => this.#guard(() => this.#flush()));
    }
    const slot = this.#slots++;
    this.#staged.set(uniforms, slot * UNIFORM_BYTES / 4);
    const entries = Array.from(bufferIds, (id, binding) => {
      const size = windows?.[2 * binding + 1];
      const resource = size ? { buffer: this.#buffer(id), offset: windows[2 * binding], size } : { buffer: this.#buffer(id) };
      return { binding, resource };
    });
    entries.push({ binding: entries.length, resource: { buffer: this.#uniforms, offset: slot * UNIFORM_BYTES, size: UNIFORM_BYTES } });
    this.#pass.setPipeline(pipeline);
    this.#pass.setBindGroup(0, device.createBindGroup({ layout, entries }));
    this.#pass.dispatchWorkgroups(x, y, z);
  }
  // Note [Dispatch batches]: the open batch's uniforms are written and its commands submitted
  // (the queue runs the write first). Before anything else reaches the queue (an upload, a read,
  // a buffer destroyed) the batch is flushed, so the queue's order is the engine's.
  #flush() {
    if (!this.#encoder) return;
    const [encoder, slots] = [this.#encoder, this.#slots];
    this.#pass.end();
    this.#encoder = this.#pass = null;
    this.#slots = 0;
    if (this.lost) return;
    this.#device.queue.writeBuffer(this.#uniforms, 0, this.#staged, 0, slots * UNIFORM_BYTES / 4);
    this.#device.queue.submit([encoder.finish()]);
    this.submits += 1;
  }

  // ---- called by the facade
  /** The bytes [offset, offset + bytes) of a buffer: the copy is submitted now (so the buffer may
   * be reused by later work), the values arrive when the device has run everything before it. */
  async read(id, offset, bytes) {
    if (this.lost) throw new FucinaError('DeviceLost', `DeviceLost: ${this.lost}`);
    const skip = offset % 4;  // a copy starts on a word: a u8 view may not
    const size = Math.max(4, Math.ceil((skip + bytes) / 4) * 4);
    const faultAt = Math.ceil(size / 8) * 8;  // a mapped range starts at a multiple of 8
    this.#flush();
    const staging = this.#device.createBuffer({ size: faultAt + FAULT_BYTES, usage: MAP_READ | COPY_DST });
    const encoder = this.#device.createCommandEncoder();
    encoder.copyBufferToBuffer(this.#buffer(id), offset - skip, staging, 0, size);
    encoder.copyBufferToBuffer(this.#buffer(this.#faultId), 0, staging, faultAt, FAULT_BYTES);
    this.#device.queue.submit([encoder.finish()]);
    this.submits += 1;
    try {
      await staging.mapAsync(MAP_MODE_READ);
      const out = staging.getMappedRange(0, size).slice(skip, skip + bytes);
      const fault = new Uint32Array(staging.getMappedRange(faultAt, FAULT_BYTES).slice(0));
      staging.unmap();
      this.downloadedBytes += bytes;
      await Promise.all(this.#pops);
      this.#check(fault);
      return out;
    } catch (e) {
      if (this.lost) throw new FucinaError('DeviceLost', `DeviceLost: ${this.lost}`);
      throw e;
    } finally {
      staging.destroy();
    }
  }
  /** Resolves when the device has run everything submitted; a WebGPU error reported since the
   * last sync (a kernel the device refused) rejects it. */
  async sync() {
    if (this.lost) throw new FucinaError('DeviceLost', `DeviceLost: ${this.lost}`);
    this.#flush();
    const staging = this.#device.createBuffer({ size: FAULT_BYTES, usage: MAP_READ | COPY_DST });
    const encoder = this.#device.createCommandEncoder();
    encoder.copyBufferToBuffer(this.#buffer(this.#faultId), 0, staging, 0, FAULT_BYTES);
    this.#device.queue.submit([encoder.finish()]);
    this.submits += 1;
    try {
      await staging.mapAsync(MAP_MODE_READ);
      const fault = new Uint32Array(staging.getMappedRange().slice(0));
      staging.unmap();
      await Promise.all(this.#pops);
      this.#check(fault);
    } finally {
      staging.destroy();
    }
  }
  // A buffer the device had no memory for (the validation errors of its uses are its
  // consequences, not reported), else the errors kept since the last check, then a fault a check
  // kernel recorded; each cleared, so it is reported once.
  #check(fault) {
    if (this.#outOfMemory !== null) {
      const bytes = this.#outOfMemory;
      this.#outOfMemory = null;
      this.#errors.length = 0;
      throw new FucinaError('OutOfMemory', `OutOfMemory: the webgpu device had no memory for a buffer of ${bytes} bytes ` +
        '(reported by the device after the op that asked for it: what was computed since the last sync() or data() is not meaningful)');
    }
    if (this.#errors.length > 0) {
      const message = this.#errors.splice(0).join('; ');
      throw new FucinaError('Internal', `Internal: the WebGPU device reported: ${message}`);
    }
    if (fault && fault[0] !== 0) {  // gpu.h's Gpu::faultBuffer: [kind, first position, a, b]
      this.#clearFault();
      const late = 'checked on the device after the op was issued: what the op computed from it is not meaningful';
      if (fault[0] === 4) {
        throw new FucinaError('InvalidArgument', `InvalidArgument: multinomial's weights on the webgpu device cannot be drawn from ` +
          `in row ${fault[1]} (a weight negative, NaN or infinite, no positive weight, or fewer positive weights than draws ` +
          `without replacement; ${late})`);
      }
      if (fault[0] === 3) {
        throw new FucinaError('ShapeMismatch', `ShapeMismatch: maskedScatter's mask on the webgpu device sets ${fault[2]} ` +
          `elements but its source has only ${fault[3]} (${late})`);
      }
      if (fault[0] === 2) {
        const [lo, hi] = new Float32Array(fault.buffer, 8, 2);
        throw new FucinaError('InvalidArgument', `InvalidArgument: a value on the webgpu device was outside [${lo}, ${hi}] ` +
          `(the one at position ${fault[1]} of an op's input, such as bceLoss's probabilities; ${late})`);
      }
      throw new FucinaError('IndexOutOfRange', `IndexOutOfRange: an index on the webgpu device was outside [0, ${fault[2]}) ` +
        `(the one at position ${fault[1]} of an op's indices, ${late})`);
    }
  }
  #clearFault() {
    this.#flush();
    this.#device.queue.writeBuffer(this.#buffer(this.#faultId), 0, new Uint32Array([0, 0xffffffff, 0, 0]));
  }

  #buffer(id) {
    // Out of memory when made, and used again (by its tensor, or by another once the engine's pool
    // hands the id out again): asked for anew; the invalid buffer holds no memory.
    if (this.#invalid.has(id)) {
      this.#invalid.delete(id);
      this.#buffers.set(id, this.#allocate(id, this.#buffers.get(id).size));
    }
    const b = this.#buffers.get(id);
    if (!b) throw new FucinaError('Internal', `Internal: no device buffer ${id}`);
    return b;
  }
}
