"""Small GPU-like traces in torch.profiler's Chrome format, with answers known by construction.

    python -m tests.profiling.synthetic   # rewrites tests/profiling/data/*.json

No GPU runs here, so these stand in for what kineto writes on CUDA: kernels and copies on the device timeline
(pid = device, tid = stream) tied by correlation id to the cudaLaunchKernel / cuLaunchKernel / cudaMemcpyAsync
/ cudaGraphLaunch call that enqueued them on the host thread, cpu_op and python_function events nested on the
host, `nosync::` ranges, `[memory]` instant events. Every kernel starts exactly `delay` µs after its launch
call starts, and the host launches every 100 µs while kernels last at most 40 µs with delays of at most 50 µs,
so the device is idle between any two kernels and a planted host stall is a GPU gap of a length we know.
The answers each test checks are in ANSWERS, computed here from the same numbers that placed the events.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"
PID, TID = 4242, 4242  # the host thread
DEVICE, STREAM = 0, 7
T0 = 1_700_000_000_000.0  # µs: kineto writes absolute host-clock timestamps
SPACING = 100.0  # µs between two launches on the host
DELAYS = (10.0, 20.0, 30.0, 40.0, 50.0)  # launch delays, used in turn

GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_kernel__5x_cublas"
CONV = "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_cudnn"
TO_NHWC = "void cudnn::ops::nchwToNhwcKernel<__nv_bfloat16, __nv_bfloat16, float, false, true, (cudnnKernelDataType_t)0>(cudnn::ops::nchw2nhwc_params_t<float>, __nv_bfloat16 const*, __nv_bfloat16*)"  # noqa: E501
TO_NCHW = "void cudnn::ops::nhwcToNchwKernel<__nv_bfloat16, __nv_bfloat16, float, true, false, (cudnnKernelDataType_t)0>(cudnn::ops::nhwc2nchw_params_t<float>, __nv_bfloat16 const*, __nv_bfloat16*)"  # noqa: E501
DIRECT_COPY = "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#10}::operator()() const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#10}::operator()() const::{lambda(c10::BFloat16)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#10}::operator()() const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#10}::operator()() const::{lambda(c10::BFloat16)#1} const&)::{lambda(int)#1})"  # noqa: E501
CAST = "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl<at::native::CastFunctor<float, c10::BFloat16> >(at::TensorIteratorBase&, at::native::CastFunctor<float, c10::BFloat16> const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl<at::native::CastFunctor<float, c10::BFloat16> >(at::TensorIteratorBase&, at::native::CastFunctor<float, c10::BFloat16> const&)::{lambda(int)#1})"  # noqa: E501
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)"  # noqa: E501
MUL = "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul> >(int, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul>)"  # noqa: E501
CAT = "void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 4, 64, 64>(at::native::(anonymous namespace)::OpaqueType<2u>*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 64, 64>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)"  # noqa: E501


@dataclass
class Builder:
    events: list[dict[str, Any]] = field(default_factory=list)
    t: float = 0.0  # host cursor, µs from T0
    corr: int = 0
    delays: list[tuple[int | None, float]] = field(default_factory=list)  # (step, delay) of each launch
    turn: int = 0
    step: int | None = None

    def span(self, cat: str, name: str, start: float, dur: float, **args: Any) -> dict[str, Any]:
        event = {"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": TID, "ts": T0 + start, "dur": dur}
        if args:
            event["args"] = args
        self.events.append(event)
        return event

    def python(self, name: str, start: float, end: float) -> None:
        self.span("python_function", name, start, end - start)

    def launch(
        self,
        ops: list[str],
        kernel: str,
        dur: float = 30.0,
        *,
        api: str = "cudaLaunchKernel",
        api_cat: str = "cuda_runtime",
        gpu_cat: str = "kernel",
        count: int = 1,
    ) -> float:
        """ops (outermost first) around one launch call at the cursor; `count` GPU events share its correlation
        (a CUDA graph). Returns the end of the last GPU event. Advances the cursor by SPACING."""
        start = self.t
        for depth, op in enumerate(ops):
            self.span("cpu_op", op, start + depth, 30.0 - 2 * depth)
        self.corr += 1
        call_at = start + len(ops) + 1
        self.span(api_cat, api, call_at, 5.0, correlation=self.corr, cbid=211)
        delay = DELAYS[self.turn % len(DELAYS)]
        self.turn += 1
        if gpu_cat == "kernel":  # launch delays are measured for kernels
            self.delays.append((self.step, delay))
        at = call_at + delay
        end = at
        for _ in range(count):
            args = {
                "device": DEVICE,
                "stream": STREAM,
                "correlation": self.corr,
                "grid": [64, 1, 1],
                "block": [128, 1, 1],
            }
            self.events.append(
                {
                    "ph": "X",
                    "cat": gpu_cat,
                    "name": kernel,
                    "pid": DEVICE,
                    "tid": STREAM,
                    "ts": T0 + at,
                    "dur": dur,
                    "args": args,
                }
            )
            end = at + dur
            at = end + 1.0
        self.t += SPACING
        return end

    def close(self, event: dict[str, Any], end: float) -> None:
        """Set the duration of a range opened at its start, now that its end (µs from T0) is known."""
        event["dur"] = end - (event["ts"] - T0)

    def memory(self, at: float, allocated: int, delta: int) -> None:
        self.events.append(
            {
                "ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": PID, "tid": TID,
                "ts": T0 + at,
                "args": {"Total Reserved": 64 << 20, "Total Allocated": allocated, "Bytes": delta, "Device Id": 0,
                         "Device Type": 1, "Addr": 1},
            }
        )  # fmt: skip

    def write(self, path: Path) -> None:
        metadata = [
            {"ph": "M", "name": "process_name", "pid": PID, "tid": 0, "args": {"name": "python"}},
            {"ph": "M", "name": "process_name", "pid": DEVICE, "tid": 0, "args": {"name": "GPU 0"}},
            {"ph": "M", "name": "thread_name", "pid": DEVICE, "tid": STREAM, "args": {"name": "stream 7"}},
        ]
        doc = {"schemaVersion": 1, "displayTimeUnit": "ms", "traceEvents": metadata + self.events}
        path.write_text(json.dumps(doc, indent=0, sort_keys=True) + "\n")


# ---- the eager trace -------------------------------------------------------------------------------------
SLEEP_US = 3000.0  # the planted host stall in step 1's scheduler step
ALLOC_GROWTH = 1 << 20  # step 1 keeps this much allocated
BASE_ALLOC = 8 << 20


def transformer_forward(b: Builder, step: int) -> tuple[float, float]:
    """8 kernels and one DtoD copy: 2 gemms, a cuDNN conv with a layout transform either side (2 layout), a
    .contiguous() (direct_copy: copy), a cast whose kernel name says nothing of copying but runs inside
    aten::copy_ (copy), a DtoD memcpy (copy), an add (not waste)."""
    start = b.t
    b.span("user_annotation", "nosync::region::transformer_forward", start, 0)  # dur set below
    region = b.events[-1]
    b.t += 10
    f0 = b.t
    b.launch(["aten::linear", "aten::addmm"], GEMM)
    b.launch(["aten::conv3d", "aten::convolution", "aten::_convolution", "aten::cudnn_convolution"], TO_NHWC)
    b.launch(["aten::conv3d", "aten::convolution", "aten::_convolution", "aten::cudnn_convolution"], CONV, 40.0)
    b.launch(["aten::conv3d", "aten::convolution", "aten::_convolution", "aten::cudnn_convolution"], TO_NCHW)
    b.launch(["aten::contiguous", "aten::clone", "aten::copy_"], DIRECT_COPY, 20.0)
    b.launch(["aten::to", "aten::_to_copy", "aten::copy_"], CAST, 20.0)
    b.launch(["aten::add"], ADD, 10.0)
    b.launch(["aten::copy_"], "Memcpy DtoD (Device -> Device)", 8.0, api="cudaMemcpyAsync", gpu_cat="gpu_memcpy")
    b.launch(["aten::linear", "aten::addmm"], GEMM)
    b.python("transformer.py(20): forward", f0 - 2, b.t)
    b.t += 10
    b.close(region, b.t)
    return start, b.t


def scheduler_step(b: Builder, stall: bool) -> tuple[float, float, float | None]:
    """2 kernels (mul, add); with `stall`, a time.sleep between them that the GPU waits out. Returns the planted
    gap (from the mul kernel's end to the add kernel's start) when there is one."""
    start = b.t
    b.span("user_annotation", "nosync::region::scheduler_step", start, 0)
    region = b.events[-1]
    b.t += 5
    s0 = b.t
    mul_end = b.launch(["aten::mul"], MUL, 10.0)
    gap = None
    if stall:
        sleep_at = b.t  # the cursor is past the mul kernel's end: from here the GPU waits
        b.python("pipe.py(80): slow_host_work", sleep_at - 1, sleep_at + SLEEP_US + 2)
        b.python("<built-in function sleep>", sleep_at, sleep_at + SLEEP_US)
        b.t = sleep_at + SLEEP_US + 5
        add_call_at = b.t + 1 + 1  # one op around the launch: call at cursor + len(ops) + 1
        add_start = add_call_at + DELAYS[b.turn % len(DELAYS)]
        gap = add_start - mul_end
    b.launch(["aten::add"], ADD, 10.0)
    b.python("scheduler.py(30): step", s0 - 2, b.t)
    b.t += 5
    b.close(region, b.t)
    return start, b.t, gap


def eager() -> tuple[Builder, dict[str, Any]]:
    b = Builder()
    answers: dict[str, Any] = {"steps": {}, "syncs": []}
    b.t = 50.0
    b.memory(b.t, BASE_ALLOC, 4096)
    b.t = 100.0
    call_start = b.t - 20
    step_spans = []
    forward_spans = []
    for step in range(3):
        if step > 0:  # the loop's top, between two steps: belongs to the next step
            b.step = step
            b.launch(["aten::cat"], CAT, 10.0)
        b.step = step
        s = b.t
        b.span("user_annotation", f"nosync::step{step}", s, 0)
        span = b.events[-1]
        b.memory(s + 1, BASE_ALLOC + (ALLOC_GROWTH if step > 1 else 0) + 4096, 4096)
        forward_spans.append(transformer_forward(b, step))
        _, _, gap = scheduler_step(b, stall=step == 1)
        if step == 1:
            b.memory(b.t, BASE_ALLOC + ALLOC_GROWTH, ALLOC_GROWTH - 4096)  # freed the 4 KiB, kept 1 MiB
            answers["gap_us"] = gap
        else:
            b.memory(b.t, BASE_ALLOC + (ALLOC_GROWTH if step > 1 else 0), -4096)
        if step == 2:  # the planted .item(): a DtoH copy and a stream sync inside aten::item
            item_at = b.t
            b.python("pipe.py(60): check_nan", item_at - 1, item_at + 260)
            b.span("cpu_op", "aten::item", item_at, 250)
            b.span("cpu_op", "aten::_local_scalar_dense", item_at + 2, 246)
            b.corr += 1
            b.span("cuda_runtime", "cudaMemcpyAsync", item_at + 10, 8, correlation=b.corr, cbid=41)
            b.events.append(
                {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pageable)", "pid": DEVICE,
                 "tid": STREAM, "ts": T0 + item_at + 40, "dur": 4,
                 "args": {"device": DEVICE, "stream": STREAM, "correlation": b.corr, "bytes": 4}}
            )  # fmt: skip
            b.corr += 1
            b.span("cuda_runtime", "cudaStreamSynchronize", item_at + 20, 220, correlation=b.corr, cbid=131)
            b.t = item_at + 270
        b.t += 10
        b.close(span, b.t)
        step_spans.append((s, b.t))
    b.step = None
    # after the steps: the VAE decode, in its own region, counted in no step
    d0 = b.t + 50
    b.t = d0
    b.span("user_annotation", "nosync::region::vae_decode", d0, 0)
    vae = b.events[-1]
    b.launch(["aten::conv3d", "aten::convolution", "aten::_convolution", "aten::cudnn_convolution"], CONV, 40.0)
    b.launch(["aten::conv3d", "aten::convolution", "aten::_convolution", "aten::cudnn_convolution"], TO_NCHW)
    b.close(vae, b.t)
    b.python("pipe.py(10): __call__", call_start, b.t + 20)

    for step, (s, e) in enumerate(step_spans):
        window_start = step_spans[step - 1][1] if step else s
        delays = [d for st, d in b.delays if st == step]
        answers["steps"][step] = {
            "window": (window_start, e),
            "kernels": 8 + 2 + (1 if step else 0),  # transformer 8, scheduler 2, the loop top's cat
            "layout_transforms": 2,
            "copies": 3 + (1 if step else 0),  # direct_copy, cast in copy_, DtoD; cat from step 1
            "transfers": 1 if step == 2 else 0,
            "syncs": 1 if step == 2 else 0,
            "delays": delays,
            "memory_growth": ALLOC_GROWTH if step == 1 else 0,
            "peak": BASE_ALLOC + (ALLOC_GROWTH if step > 1 else 0) + 4096 if step != 1 else BASE_ALLOC + ALLOC_GROWTH,
        }
    # from the end of a step's denoiser call to the next call's start, in the step the interval starts in
    answers["between_calls_us"] = {
        step: forward_spans[step + 1][0] - forward_spans[step][1] for step in range(len(forward_spans) - 1)
    }
    answers["delays"] = [d for _, d in b.delays]
    return b, answers


# ---- the compiled trace ----------------------------------------------------------------------------------
COMPILED_KERNELS = (
    "triton_poi_fused_clone_0",  # layout: a clone is inductor's contiguous()
    "triton_red_fused_native_layer_norm_1",
    "triton_poi_fused__to_copy_2",  # copy: a dtype conversion alone
    "triton_poi_fused_add_mul_3",
)
GRAPH_KERNELS = 3  # one cudaGraphLaunch, three kernels, one launch delay


def compiled() -> tuple[Builder, dict[str, Any]]:
    b = Builder()
    b.t = 100.0
    spans = []
    for step in range(2):
        b.step = step
        s = b.t
        b.span("user_annotation", f"nosync::step{step}", s, 0)
        span = b.events[-1]
        b.span("user_annotation", "nosync::region::transformer_forward", s + 1, 0)
        region = b.events[-1]
        b.t = s + 5
        b.span("cpu_op", "Torch-Compiled Region: 0/0", b.t, 0)
        dynamo = b.events[-1]
        b.span("cpu_op", "CompiledFunction", b.t + 1, 0)
        aot = b.events[-1]
        b.t += 3
        for name in COMPILED_KERNELS:
            b.launch([], name, 20.0, api="cuLaunchKernel", api_cat="cuda_driver")
        b.launch(["aten::mm"], GEMM, 30.0)  # an extern kernel of the compiled graph: compiled too
        if step == 1:
            b.launch([], "triton_poi_fused_mul_4", 5.0, api="cudaGraphLaunch", count=GRAPH_KERNELS)
        b.close(aot, b.t - 1)
        b.close(dynamo, b.t)
        b.t += 5
        b.close(region, b.t)
        b.span("user_annotation", "nosync::region::scheduler_step", b.t, 0)
        sched = b.events[-1]
        b.t += 2
        b.launch(["aten::add"], ADD, 10.0)  # eager
        b.close(sched, b.t)
        b.t += 5
        b.close(span, b.t)
        spans.append((s, b.t))
    answers = {
        "steps": {
            0: {"kernels": 6, "compiled": 5, "layout": 1, "copies": 1},
            1: {"kernels": 6 + GRAPH_KERNELS, "compiled": 5 + GRAPH_KERNELS, "layout": 1, "copies": 1},
        },
        "delays": [d for _, d in b.delays],  # one per launch call, the graph's included once
    }
    return b, answers


TRACES = {"gpu_eager.json": eager, "gpu_compiled.json": compiled}


def answers(name: str) -> dict[str, Any]:
    return TRACES[name]()[1]


def main() -> None:
    DATA.mkdir(exist_ok=True)
    for name, make in TRACES.items():
        builder, _ = make()
        builder.write(DATA / name)
        print(f"wrote {DATA / name}")


if __name__ == "__main__":
    main()
