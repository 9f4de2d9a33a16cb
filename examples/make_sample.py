#!/usr/bin/env python3
"""Writes examples/sample.textproto: a small, realistic-looking heapprofd trace
for the README demo (synthetic: no device was involved).

  * pid 4242 com.example.gallery (Java app: UI thread, RenderThread, worker
    threads, JNI into libgallery.so, one JIT frame) and pid 1187
    /system/bin/cameraserver (native binder daemon);
  * heap libc.malloc, sampling interval 4096, 3 continuous dumps;
  * new heapprofd layout: samples first, then the InternedData for callstacks
    not emitted before, then an empty closing ProfilePacket; interning is
    incremental across dumps;
  * ClockSnapshot (MONOTONIC_COARSE 4 -> BOOTTIME 6 offset +2.5 s),
    ProcessTree, TraceConfig with the heapprofd config.

Deterministic: same output every run. Regenerate with
  python3 examples/make_sample.py > examples/sample.textproto
and encode with tests/data/regen.sh.
"""

import hashlib
import sys

# ---- libraries: path components, load address, size ------------------------
LIBS = {
    'libc': (['apex', 'com.android.runtime', 'lib64', 'bionic', 'libc.so'],
             0x7a1c400000, 0xc6000),
    'libc++': (['system', 'lib64', 'libc++.so'], 0x7a1d200000, 0xa4000),
    'libutils': (['system', 'lib64', 'libutils.so'], 0x7a1e000000, 0x40000),
    'libbinder': (['system', 'lib64', 'libbinder.so'], 0x7a1e800000, 0xb0000),
    'libandroid_runtime': (['system', 'lib64', 'libandroid_runtime.so'],
                           0x7a20000000, 0x1f0000),
    'libhwui': (['system', 'lib64', 'libhwui.so'], 0x7a28000000, 0x8a0000),
    'libskia': (['system', 'lib64', 'libskia.so'], 0x7a30000000, 0x6c0000),
    'libart': (['apex', 'com.android.art', 'lib64', 'libart.so'],
               0x7a38000000, 0x9b0000),
    'libgallery': (['data', 'app', '~~3xQn0bS9T1Ku2pE7jQ==',
                    'com.example.gallery-hV3eK8cLr0aWmP2Y5dZ1ug==', 'lib',
                    'arm64', 'libgallery.so'], 0x7b10000000, 0x1c4000),
    'libcamera': (['system', 'lib64', 'libcameraservice.so'], 0x7a40000000,
                  0x3c0000),
    'app_process': (['system', 'bin', 'app_process64'], 0x5d8a100000, 0x8000),
    'cameraserver': (['system', 'bin', 'cameraserver'], 0x5e21300000, 0x6000),
    'boot_framework': (['system', 'framework', 'arm64', 'boot-framework.oat'],
                       0x70f4a000, 0x1a3e000),
    'base_odex': (['data', 'app', '~~3xQn0bS9T1Ku2pE7jQ==',
                   'com.example.gallery-hV3eK8cLr0aWmP2Y5dZ1ug==', 'oat',
                   'arm64', 'base.odex'], 0x7b40000000, 0x2a0000),
    'base_apk': (['data', 'app', '~~3xQn0bS9T1Ku2pE7jQ==',
                  'com.example.gallery-hV3eK8cLr0aWmP2Y5dZ1ug==', 'base.apk'],
                 0x7b50000000, 0x9f0000),
    'jit': (['memfd:jit-cache (deleted)'], 0x7b60000000, 0x2000000),
}
NO_BUILD_ID = {'boot_framework', 'base_odex', 'base_apk', 'jit'}

# ---- frames: (lib, name or None for unnamed, rel_pc) ------------------------
F = {}


def fr(key, lib, name, pc):
  F[key] = (lib, name, pc)


fr('libc_init', 'libc', '__libc_init', 0x4e9d4)
fr('start_thread', 'libc', '__start_thread', 0xb4d8c)
fr('pthread_start', 'libc', '_Z15__pthread_startPv', 0xb4ad0)
fr('malloc', 'libc', 'malloc', 0x4a8b4)
fr('calloc', 'libc', 'calloc', 0x4b0e0)
fr('realloc', 'libc', 'realloc', 0x4b5c8)
fr('new', 'libc++', '_Znwm', 0x9a3c8)
fr('new_arr', 'libc++', '_Znam', 0x9a44c)
fr('thread_loop', 'libutils', '_ZN7android6Thread11_threadLoopEPv', 0x15e7c)
fr('app_main', 'app_process', 'main', 0x2ad8)
fr('rt_start', 'libandroid_runtime',
   '_ZN7android14AndroidRuntime5startEPKcRKNS_6VectorINS_7String8EEEb',
   0x11e3c0)
fr('call_static', 'libandroid_runtime',
   '_ZN7_JNIEnv20CallStaticVoidMethodEP7_jclassP10_jmethodIDz', 0x11f240)
fr('invoke_static', 'libart', 'art_quick_invoke_static_stub', 0x218a6c)
fr('invoke_stub', 'libart', 'art_quick_invoke_stub', 0x218968)
fr('jni_tramp', 'libart', 'art_jni_trampoline', 0x21c400)
fr('nterp', 'libart', 'nterp_helper', 0x20f2c0)
fr('zygote_main', 'boot_framework', 'com.android.internal.os.ZygoteInit.main',
   0x9b5e1c)
fr('caller_run', 'boot_framework',
   'com.android.internal.os.RuntimeInit$MethodAndArgsCaller.run', 0x9b1f40)
fr('at_main', 'boot_framework', 'android.app.ActivityThread.main', 0x4c2a10)
fr('looper_loop', 'boot_framework', 'android.os.Looper.loop', 0x6b2d54)
fr('looper_once', 'boot_framework', 'android.os.Looper.loopOnce', 0x6b2a08)
fr('dispatch', 'boot_framework', 'android.os.Handler.dispatchMessage',
   0x6a9c30)
fr('choreo_run', 'boot_framework',
   'android.view.Choreographer$FrameDisplayEventReceiver.run', 0x7d2e48)
fr('do_frame', 'boot_framework', 'android.view.Choreographer.doFrame',
   0x7d1a6c)
fr('traversal', 'boot_framework',
   'android.view.ViewRootImpl.performTraversals', 0x84f3b0)
fr('perf_draw', 'boot_framework', 'android.view.ViewRootImpl.performDraw',
   0x84c2f4)
fr('rv_layout', 'base_odex',
   'androidx.recyclerview.widget.RecyclerView.onLayout', 0x1a2c40)
fr('on_bind', 'jit',
   'com.example.gallery.ui.GridAdapter.onBindViewHolder', 0x3c21f8)
fr('thumb_load', 'base_odex',
   'com.example.gallery.data.ThumbnailLoader.load', 0x8c1d4)
fr('thumb_decode', 'base_apk',
   'com.example.gallery.data.ThumbnailLoader.decode', 0x3f11a2)
fr('exif_read', 'base_apk', 'com.example.gallery.data.ExifReader.read',
   0x3f2e60)
fr('jni_decode', 'libgallery',
   'Java_com_example_gallery_data_ThumbnailLoader_nativeDecode', 0x3c6e4)
fr('jni_exif', 'libgallery',
   'Java_com_example_gallery_data_ExifReader_nativeRead', 0x3d0a8)
fr('jpeg_decode', 'libgallery',
   '_ZN7gallery11JpegDecoder6decodeENS_4SpanIKhEE', 0x41b20)
fr('jpeg_scan', 'libgallery', '_ZN7gallery11JpegDecoder9readScansEv',
   0x42f8c)
fr('huff_init', 'libgallery',
   '_ZN7gallery12HuffmanTable5buildEPKhm', 0x44a10)
fr('img_alloc', 'libgallery', '_ZN7gallery11ImageBuffer8allocateEmm',
   0x4c3e0)
fr('scale', 'libgallery',
   '_ZN7gallery6Scaler9downscaleERKNS_11ImageBufferEii', 0x4e7f4)
fr('exif_parse', 'libgallery', '_ZN7gallery4Exif5parseEPKhm', 0x51c08)
fr('exif_tag', 'libgallery',
   '_ZN7gallery4Exif7readTagERNS_10ByteReaderE', 0x52344)
fr('thread_proxy', 'libgallery',
   '_ZNSt6__ndk114__thread_proxyINS_5tupleIJNS_10unique_ptrINS_15__thread_structENS_14default_deleteIS3_EEEEMN7gallery10ThreadPoolEFvvEPS8_EEEEEPvSD_',
   0x5a4b0)
fr('worker', 'libgallery', '_ZN7gallery10ThreadPool10workerLoopEv', 0x5b1d4)
fr('task_run', 'libgallery', '_ZN7gallery4Task3runEv', 0x5c02c)
fr('tile_insert', 'libgallery',
   '_ZN7gallery9TileCache6insertEjNSt6__ndk110shared_ptrINS_4TileEEE', 0x61f88)
fr('tile_evict', 'libgallery', '_ZN7gallery9TileCache5evictEm', 0x62a1c)
fr('lru_touch', 'libgallery', '_ZN7gallery8LruIndex5touchEj', 0x63650)
fr('vec_append', 'libgallery',
   '_ZNSt6__ndk16vectorIjNS_9allocatorIjEEE8__appendEm', 0x6d7e0)
fr('disk_read', 'libgallery', '_ZN7gallery9DiskCache4readEj', 0x67d44)
fr('unnamed_g1', 'libgallery', None, 0x7a9c0)
fr('unnamed_g2', 'libgallery', None, 0x7b214)
fr('rt_threadloop', 'libhwui',
   '_ZN7android10uirenderer12renderthread12RenderThread10threadLoopEv',
   0x2e7c20)
fr('workqueue', 'libhwui', '_ZN7android10uirenderer9WorkQueue7processEv',
   0x2e9a54)
fr('drawframe', 'libhwui',
   '_ZN7android10uirenderer12renderthread13DrawFrameTask3runEv', 0x2d3f10)
fr('ctx_draw', 'libhwui',
   '_ZN7android10uirenderer12renderthread13CanvasContext4drawEb', 0x2c81ac)
fr('pipe_draw', 'libhwui',
   '_ZN7android10uirenderer12skiapipeline18SkiaOpenGLPipeline4drawEv',
   0x2b0e64)
fr('render_frame', 'libhwui',
   '_ZN7android10uirenderer12skiapipeline12SkiaPipeline11renderFrameEv',
   0x2b6a30)
fr('rn_draw', 'libhwui',
   '_ZN7android10uirenderer12skiapipeline18RenderNodeDrawable4drawEP8SkCanvas',
   0x2a8c54)
fr('hwui_unnamed', 'libhwui', None, 0x31f0c8)
fr('sk_draw_image', 'libskia',
   '_ZN8SkCanvas13drawImageRectEPK7SkImageRK6SkRectS5_RK17SkSamplingOptionsPK7SkPaintNS_17SrcRectConstraintE',
   0x1f4a20)
fr('sk_lazy', 'libskia',
   '_ZNK12SkImage_Lazy11getROPixelsEP15GrDirectContextP8SkBitmap', 0x2c1e30)
fr('sk_alloc_px', 'libskia',
   '_ZN8SkBitmap14tryAllocPixelsEPNS_9AllocatorE', 0x1b2f58)
fr('sk_make_alloc', 'libskia',
   '_ZN16SkMallocPixelRef12MakeAllocateERK11SkImageInfom', 0x1d0c44)
fr('sk_malloc', 'libskia', '_Z15sk_malloc_flagsmj', 0x1d8a10)
fr('sk_path', 'libskia', '_ZN6SkPath6lineToEff', 0x23b4e0)
fr('sk_pathref', 'libskia',
   '_ZN9SkPathRef12growForVerbsEii', 0x23e1a8)
fr('sk_text', 'libskia',
   '_ZN8SkCanvas16drawTextBlobImplEPK10SkTextBlobffRK7SkPaint', 0x1f8e70)
fr('sk_glyph', 'libskia',
   '_ZN13SkStrikeCache18findOrCreateStrikeERK12SkDescriptorRK22SkScalerContextEffectsRK10SkTypeface',
   0x2a5c18)
fr('sk_unnamed', 'libskia', None, 0x3a0b04)
fr('cam_main', 'cameraserver', 'main', 0x1c2c)
fr('join_pool', 'libbinder',
   '_ZN7android14IPCThreadState14joinThreadPoolEb', 0x5b3e8)
fr('get_cmd', 'libbinder',
   '_ZN7android14IPCThreadState20getAndExecuteCommandEv', 0x5ac10)
fr('exec_cmd', 'libbinder',
   '_ZN7android14IPCThreadState14executeCommandEi', 0x5a4f4)
fr('bbinder_tx', 'libbinder',
   '_ZN7android7BBinder8transactEjRKNS_6ParcelEPS1_j', 0x4f0c8)
fr('cam_ontx', 'libcamera',
   '_ZN7android13CameraService10onTransactEjRKNS_6ParcelEPS1_j', 0x1a2f40)
fr('cam_connect', 'libcamera',
   '_ZN7android13CameraService13connectDeviceERKNS_8String16E',
   0x1b1e9c)
fr('cam_meta', 'libcamera',
   '_ZN7android14CameraMetadata6appendERKS0_', 0x2c4a18)
fr('cam_unnamed', 'libcamera', None, 0x33f0d0)
fr('parcel_write', 'libbinder', '_ZN7android6Parcel5writeEPKvm', 0x52c08)
fr('parcel_grow', 'libbinder', '_ZN7android6Parcel13continueWriteEm',
   0x53a10)
fr('pool_spawn', 'libbinder',
   '_ZN7android12ProcessState17spawnPooledThreadEb', 0x61e0c)
fr('pool_thread', 'libbinder',
   '_ZN7android10PoolThread10threadLoopEv', 0x6230c)

# ---- stack building blocks (root first) ------------------------------------
MAIN_JAVA = ['app_main', 'rt_start', 'invoke_static', 'at_main',
             'looper_loop', 'dispatch']
UI = MAIN_JAVA + ['choreo_run', 'traversal']
RENDER = ['start_thread', 'pthread_start', 'thread_loop', 'rt_threadloop',
          'workqueue', 'drawframe', 'ctx_draw', 'pipe_draw', 'render_frame']
WORKER = ['start_thread', 'pthread_start', 'thread_proxy', 'worker',
          'task_run']
BINDER = ['start_thread', 'pthread_start', 'thread_loop', 'pool_thread',
          'join_pool', 'get_cmd', 'exec_cmd', 'bbinder_tx', 'cam_ontx']

APP_STACKS = [
    UI + ['rv_layout', 'on_bind', 'thumb_load', 'thumb_decode', 'jni_tramp',
          'jni_decode', 'jpeg_decode', 'img_alloc', 'new', 'malloc'],
    UI + ['rv_layout', 'on_bind', 'thumb_load', 'thumb_decode', 'jni_tramp',
          'jni_decode', 'jpeg_decode', 'jpeg_scan', 'huff_init', 'new_arr',
          'malloc'],
    UI + ['rv_layout', 'on_bind', 'thumb_load', 'thumb_decode', 'jni_tramp',
          'jni_decode', 'jpeg_decode', 'jpeg_scan', 'unnamed_g1', 'malloc'],
    UI + ['rv_layout', 'on_bind', 'thumb_load', 'thumb_decode', 'jni_tramp',
          'jni_decode', 'scale', 'img_alloc', 'new', 'malloc'],
    UI + ['rv_layout', 'on_bind', 'thumb_load', 'exif_read', 'nterp',
          'jni_tramp', 'jni_exif', 'exif_parse', 'exif_tag', 'new', 'malloc'],
    UI + ['rv_layout', 'on_bind', 'thumb_load', 'exif_read', 'nterp',
          'jni_tramp', 'jni_exif', 'exif_parse', 'calloc'],
    MAIN_JAVA + ['thumb_load', 'thumb_decode', 'jni_tramp', 'jni_decode',
                 'jpeg_decode', 'img_alloc', 'new', 'malloc'],
    MAIN_JAVA + ['thumb_load', 'thumb_decode', 'jni_tramp', 'jni_decode',
                 'unnamed_g2', 'unnamed_g1', 'malloc'],
    UI + ['perf_draw', 'invoke_stub', 'nterp', 'malloc'],
    RENDER + ['rn_draw', 'sk_draw_image', 'sk_lazy', 'sk_alloc_px',
              'sk_make_alloc', 'sk_malloc', 'malloc'],
    RENDER + ['rn_draw', 'sk_draw_image', 'sk_lazy', 'sk_alloc_px',
              'sk_make_alloc', 'sk_malloc', 'calloc'],
    RENDER + ['rn_draw', 'sk_path', 'sk_pathref', 'realloc'],
    RENDER + ['rn_draw', 'sk_text', 'sk_glyph', 'new', 'malloc'],
    RENDER + ['rn_draw', 'sk_text', 'sk_glyph', 'sk_unnamed', 'malloc'],
    RENDER + ['hwui_unnamed', 'new', 'malloc'],
    RENDER + ['rn_draw', 'rn_draw', 'sk_draw_image', 'sk_lazy', 'sk_alloc_px',
              'sk_make_alloc', 'sk_malloc', 'malloc'],
    WORKER + ['tile_insert', 'new', 'malloc'],
    WORKER + ['tile_insert', 'lru_touch', 'vec_append', 'new', 'malloc'],
    WORKER + ['tile_insert', 'tile_evict', 'lru_touch', 'vec_append', 'new',
              'malloc'],
    WORKER + ['disk_read', 'img_alloc', 'new', 'malloc'],
    WORKER + ['disk_read', 'jpeg_decode', 'img_alloc', 'new', 'malloc'],
    WORKER + ['disk_read', 'jpeg_decode', 'jpeg_scan', 'huff_init', 'new_arr',
              'malloc'],
    WORKER + ['disk_read', 'unnamed_g2', 'calloc'],
    WORKER + ['disk_read', 'jpeg_decode', 'scale', 'img_alloc', 'new',
              'malloc'],
    WORKER + ['task_run', 'tile_insert', 'new', 'malloc'],
    WORKER + ['disk_read', 'exif_parse', 'exif_tag', 'realloc'],
    WORKER + ['tile_insert', 'tile_evict', 'unnamed_g1', 'malloc'],
    WORKER + ['disk_read', 'jpeg_decode', 'jpeg_scan', 'unnamed_g1',
              'unnamed_g2', 'malloc'],
]
DAEMON_STACKS = [
    ['cam_main', 'pool_spawn'] + BINDER[2:] + ['cam_connect', 'cam_meta',
                                              'new', 'malloc'],
    BINDER + ['cam_connect', 'cam_meta', 'realloc'],
    BINDER + ['cam_meta', 'parcel_write', 'parcel_grow', 'realloc'],
    BINDER + ['parcel_write', 'parcel_grow', 'malloc'],
    BINDER + ['cam_unnamed', 'new', 'malloc'],
    BINDER + ['cam_connect', 'cam_unnamed', 'calloc'],
    ['libc_init', 'cam_main', 'join_pool', 'get_cmd', 'exec_cmd', 'bbinder_tx',
     'cam_ontx', 'cam_meta', 'new', 'malloc'],
    BINDER + ['cam_connect', 'parcel_write', 'parcel_grow', 'realloc'],
    ['libc_init', 'cam_main', 'join_pool', 'get_cmd', 'exec_cmd', 'bbinder_tx',
     'parcel_write', 'parcel_grow', 'malloc'],
    BINDER + ['cam_meta', 'cam_unnamed', 'new', 'malloc'],
]


def build_id(lib):
  return hashlib.sha1(('heapconv-example/' + lib).encode()).digest()


def esc(b):
  return ''.join('\\x%02x' % c for c in b)


def q(s):
  return '"' + s.replace('\\', '\\\\').replace('"', '\\"') + '"'


class Interner:
  """heapprofd-style: one id space shared by all tables, emitted lazily."""

  def __init__(self):
    self.next = 1
    self.ids = {}
    self.emitted = set()

  def id(self, key):
    if key not in self.ids:
      self.ids[key] = self.next
      self.next += 1
    return self.ids[key]


def main():
  it = Interner()
  stacks = []  # (pid, callstack iid, frame keys)
  for s in APP_STACKS:
    stacks.append((4242, s))
  for s in DAEMON_STACKS:
    stacks.append((1187, s))
  for _, s in stacks:
    assert 8 <= len(s) <= 20, (len(s), s)

  # Values: cumulative (alloc_count, alloc_bytes, free_count, free_bytes) per
  # dump; None = callstack not present in that dump. Deterministic.
  def values(i, pid):
    unit = [64, 128, 256, 512, 1024, 4096, 16384, 65536][(i * 5) % 8]
    n1 = 3 + (i * 7) % 11
    first = 0 if i % 6 else 1  # some callstacks start in dump 2
    out = []
    for d in range(3):
      if d < first:
        out.append(None)
        continue
      a = n1 * (1 + d) + (i % 3) * d
      f = (a * ((i % 4) + 1)) // 5 if d or i % 2 else 0
      size = max(unit, 4096) if unit < 4096 and i % 5 == 0 else unit
      out.append((a, a * size, f, f * size))
    return out

  print('# heapconv example: a small realistic heapprofd trace (synthetic).')
  print('# Written by examples/make_sample.py; encode with tests/data/regen.sh.')
  print('packet { timestamp: 2500000000 trusted_packet_sequence_id: 1 '
        'clock_snapshot {')
  snap = {6: 2500000000, 1: 1767225600000000000, 2: 1767225600000000000,
          3: 1000000321, 4: 1000000000, 5: 1000000987}
  for cid in (6, 1, 2, 3, 4, 5):
    print('  clocks { clock_id: %d timestamp: %d }' % (cid, snap[cid]))
  print('  primary_trace_clock: BUILTIN_CLOCK_BOOTTIME } }')
  print('packet { timestamp: 2500000000 trusted_packet_sequence_id: 1 '
        'trace_config { buffers { size_kb: 65536 } data_sources { config {')
  print('  name: "android.heapprofd" target_buffer: 0 heapprofd_config {')
  print('    sampling_interval_bytes: 4096 process_cmdline: '
        '"com.example.gallery" process_cmdline: "cameraserver"')
  print('    continuous_dump_config { dump_phase_ms: 1000 '
        'dump_interval_ms: 1000 }')
  print('    shmem_size_bytes: 8388608 block_client: true } } } '
        'duration_ms: 3500 } }')
  print('packet { timestamp: 2500100000 trusted_packet_sequence_id: 1 '
        'process_tree {')
  print('  processes { pid: 1 ppid: 0 uid: 0 cmdline: "/system/bin/init" '
        'cmdline: "second_stage" }')
  print('  processes { pid: 721 ppid: 1 uid: 0 cmdline: "zygote64" }')
  print('  processes { pid: 1187 ppid: 1 uid: 1047 cmdline: '
        '"/system/bin/cameraserver" }')
  print('  processes { pid: 4242 ppid: 721 uid: 10187 cmdline: '
        '"com.example.gallery" } } }')
  seq = 'trusted_packet_sequence_id: 7 trusted_pid: 1003'
  print('packet { %s timestamp: 2500200000 incremental_state_cleared: true '
        'interned_data { build_ids { iid: 0 str: "" } mapping_paths '
        '{ iid: 0 str: "" } function_names { iid: 0 str: "" } } }' % seq)

  cs_ids = [it.id(('cs', i)) for i in range(len(stacks))]
  index = 0
  prev_ts = 1000000000
  for d in range(3):
    mono = 2000000000 + d * 1000000000  # MONOTONIC_COARSE
    boot = mono + 1500000000            # BOOTTIME
    new_cs = []
    for pid in (4242, 1187):
      lines = []
      for i, (p, frames) in enumerate(stacks):
        if p != pid:
          continue
        v = values(i, pid)[d]
        if v is None:
          continue
        lines.append('    samples { callstack_id: %d self_allocated: %d '
                     'self_freed: %d alloc_count: %d free_count: %d }' %
                     (cs_ids[i], v[1], v[3], v[0], v[2]))
        if ('cs', i) not in it.emitted:
          it.emitted.add(('cs', i))
          new_cs.append(i)
      print('packet { %s timestamp: %d profile_packet { index: %d '
            'continued: true' % (seq, boot, index))
      index += 1
      print('  process_dumps { pid: %d heap_name: "libc.malloc" '
            'sampling_interval_bytes: 4096 orig_sampling_interval_bytes: 4096 '
            'start_timestamp: %d timestamp: %d' % (pid, prev_ts, mono))
      print('    stats { unwinding_errors: %d heap_samples: %d '
            'map_reparses: %d total_unwinding_time_us: %d }' %
            (d, 800 + 450 * d + (pid % 97), 1 + d, 9000 + 4100 * d))
      print('\n'.join(lines) + ' } } }')
    # InternedData for callstacks not emitted before (strings, mappings,
    # frames first, as heapprofd does), then the closing packet.
    idl = []
    for i in new_cs:
      for key in stacks[i][1]:
        lib, name, pc = F[key]
        comps, start, size = LIBS[lib]
        for c in comps:
          if ('path', c) not in it.emitted:
            it.emitted.add(('path', c))
            idl.append('mapping_paths { iid: %d str: %s }' %
                       (it.id(('path', c)), q(c)))
        if lib not in NO_BUILD_ID and ('bid', lib) not in it.emitted:
          it.emitted.add(('bid', lib))
          idl.append('build_ids { iid: %d str: "%s" }' %
                     (it.id(('bid', lib)), esc(build_id(lib))))
        if ('map', lib) not in it.emitted:
          it.emitted.add(('map', lib))
          bid = 0 if lib in NO_BUILD_ID else it.id(('bid', lib))
          idl.append('mappings { iid: %d build_id: %d start_offset: 0 '
                     'start: 0x%x end: 0x%x exact_offset: 0 load_bias: 0 %s }'
                     % (it.id(('map', lib)), bid, start, start + size,
                        ' '.join('path_string_ids: %d' % it.id(('path', c))
                                 for c in comps)))
        if name is not None and ('fn', name) not in it.emitted:
          it.emitted.add(('fn', name))
          idl.append('function_names { iid: %d str: %s }' %
                     (it.id(('fn', name)), q(name)))
        if ('frame', key) not in it.emitted:
          it.emitted.add(('frame', key))
          fn = 0 if name is None else it.id(('fn', name))
          idl.append('frames { iid: %d function_name_id: %d mapping_id: %d '
                     'rel_pc: 0x%x }' % (it.id(('frame', key)), fn,
                                        it.id(('map', lib)), pc))
      idl.append('callstacks { iid: %d %s }' % (cs_ids[i], ' '.join(
          'frame_ids: %d' % it.id(('frame', k)) for k in stacks[i][1])))
    print('packet { %s timestamp: %d profile_packet { index: %d continued: '
          'true }' % (seq, boot, index))
    index += 1
    print('  interned_data {\n    ' + '\n    '.join(idl) + ' } }')
    print('packet { %s timestamp: %d profile_packet { index: %d continued: '
          'false } }' % (seq, boot, index))
    index += 1
    prev_ts = mono
  return 0


if __name__ == '__main__':
  sys.exit(main())
