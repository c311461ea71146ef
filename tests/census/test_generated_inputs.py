"""census.generated_inputs: the inputs an untested class takes and its sibling does not give, made from the sibling's
by name and annotation, seeded; nothing for a name or an annotation it does not know."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import PIL.Image
import torch

from pytest_nosync.census.generated_inputs import generated


class Inpaint:
    def __call__(
        self,
        prompt: str,
        image: PIL.Image.Image | torch.Tensor | None = None,
        mask_image: PIL.Image.Image | torch.Tensor | None = None,
        control_image: PIL.Image.Image | None = None,
        mask: torch.Tensor | None = None,  # no name it knows: left to its default
        masked_image_latents: torch.Tensor | None = None,
    ) -> None: ...


class AudioToAudio:
    def __call__(
        self,
        prompt: str,
        duration: float = 1.0,
        audio: torch.Tensor | None = None,
        mask_start_seconds: float | None = None,
        mask_end_seconds: float | None = None,
    ) -> None: ...


class Video:
    def __call__(self, prompt: str, video: torch.FloatTensor = None, mask_video: torch.FloatTensor = None) -> None: ...


class Untyped:
    def __call__(self, prompt: str, mask_image: list[int] | None = None, audio: str | None = None) -> None: ...


def test_a_pil_siblings_image_gives_a_pil_mask_of_its_size_and_itself_as_the_control_image() -> None:
    image = PIL.Image.new("RGB", (24, 16))
    made = generated(Inpaint, {"prompt": "p", "image": image}, pipe=None)
    assert sorted(made) == ["control_image", "mask_image"]
    assert made["control_image"] is image
    assert made["mask_image"].size == (24, 16) and made["mask_image"].mode == "L"
    assert made["mask_image"].getpixel((0, 0)) == 0 and made["mask_image"].getpixel((23, 0)) == 255


def test_a_tensor_siblings_image_gives_a_tensor_mask_and_without_an_image_its_height_and_width_are_used() -> None:
    made = generated(Inpaint, {"prompt": "p", "image": torch.rand(2, 3, 8, 12)}, pipe=None)
    assert made["mask_image"].shape == (2, 1, 8, 12) and set(made["mask_image"].unique().tolist()) == {0.0, 1.0}
    made = generated(Inpaint, {"prompt": "p", "height": 16, "width": 20}, pipe=None)
    assert made["image"].size == (20, 16) and made["mask_image"].size == (20, 16)
    again = generated(Inpaint, {"prompt": "p", "height": 16, "width": 20}, pipe=None)
    assert made["image"].tobytes() == again["image"].tobytes()  # seeded


def test_audio_takes_the_vaes_rate_and_channels_and_the_siblings_duration() -> None:
    pipe: Any = SimpleNamespace(vae=SimpleNamespace(config=SimpleNamespace(sampling_rate=16, audio_channels=2)))
    made = generated(AudioToAudio, {"prompt": "p", "duration": 2.0}, pipe)
    assert made["audio"].shape == (1, 2, 32)
    assert torch.equal(made["audio"], generated(AudioToAudio, {"prompt": "p", "duration": 2.0}, pipe)["audio"])
    assert (made["mask_start_seconds"], made["mask_end_seconds"]) == (0.5, 1.5)
    assert "audio" not in generated(AudioToAudio, {"prompt": "p", "duration": 2.0}, pipe=None)  # no rate: none


def test_a_video_of_the_siblings_frames_and_size() -> None:
    made = generated(Video, {"prompt": "p", "num_frames": 5, "height": 16, "width": 8}, pipe=None)
    assert made["video"].shape == (1, 3, 5, 16, 8) and made["mask_video"].shape == (1, 1, 5, 16, 8)


def test_an_annotation_that_takes_no_such_value_gets_none() -> None:
    assert generated(Untyped, {"prompt": "p"}, pipe=None) == {}


class ImageOrVideo:
    def __call__(self, prompt: str, image: PIL.Image.Image | None = None, video: torch.Tensor | None = None) -> None:
        pass


def test_a_class_starting_from_an_image_or_a_video_gets_one_of_them() -> None:
    assert sorted(generated(ImageOrVideo, {"prompt": "p", "num_frames": 3}, pipe=None)) == ["video"]
    assert sorted(generated(ImageOrVideo, {"prompt": "p"}, pipe=None)) == ["image"]


class FromStepToStep:
    def __call__(self, prompt: str, num_inference_steps: int = 50, t0: int = 44, t1: int = 47) -> None: ...


def test_step_indices_whose_defaults_assume_fifty_steps_are_the_siblings_last_two_and_none_below_two_steps() -> None:
    assert generated(FromStepToStep, {"prompt": "p", "num_inference_steps": 3}, pipe=None) == {"t0": 1, "t1": 2}
    assert generated(FromStepToStep, {"prompt": "p", "num_inference_steps": 1}, pipe=None) == {}
    assert generated(FromStepToStep, {"prompt": "p"}, pipe=None) == {}


class Upsample:  # a list of frames, a tensor among its kinds (LTX-2's latent upsampler)
    def __call__(self, video: list[PIL.Image.Image | torch.Tensor] | None = None, latents: torch.Tensor = None) -> None:
        pass


class Decode:  # decodes latents it requires (LTX-2's diffusion decode pipeline)
    def __call__(self, latents: torch.Tensor, output_type: str = "pil") -> None: ...


def _latent_space(channels: int, spatial: int, temporal: int) -> Any:
    config = {"latent_channels": channels}
    vae = SimpleNamespace(config=config, spatial_compression_ratio=spatial, temporal_compression_ratio=temporal)
    return SimpleNamespace(components={"vae": vae})


def test_a_video_whose_annotation_is_a_list_is_its_frames_and_optional_latents_are_left_to_their_default() -> None:
    made = generated(Upsample, {"num_frames": 5, "height": 16, "width": 8}, _latent_space(4, 2, 2))
    assert sorted(made) == ["video"]  # latents only where required
    assert len(made["video"]) == 5 and made["video"][0].size == (8, 16)


def test_required_latents_are_the_siblings_frames_and_size_in_the_pipelines_latent_space() -> None:
    made = generated(Decode, {"num_frames": 5, "height": 16, "width": 8}, _latent_space(4, 2, 2))
    assert made["latents"].shape == (1, 4, 3, 8, 4)
    again = generated(Decode, {"num_frames": 5, "height": 16, "width": 8}, _latent_space(4, 2, 2))
    assert torch.equal(made["latents"], again["latents"])  # seeded
    assert generated(Decode, {"num_frames": 5}, pipe=None) == {}  # no latent space to size them by: none
    # a call that takes no frame count (the decoder's): three latent frames, what its 3x3x3 neighborhoods need
    assert generated(Decode, {}, _latent_space(4, 2, 2))["latents"].shape == (1, 4, 3, 16, 16)


class Pyramid:  # Helios's pyramid: steps by stage, a video read by diffusers' VideoProcessor and encoded by chunks
    vae_scale_factor_temporal = 4
    scheduler = SimpleNamespace(config={"stages": 2})

    def __call__(
        self,
        prompt: str,
        num_frames: int = 132,
        video: PIL.Image.Image | torch.Tensor | list[PIL.Image.Image] | list[torch.Tensor] | None = None,
        num_latent_frames_per_chunk: int = 9,
        pyramid_num_inference_steps_list: list | None = None,
    ) -> None: ...


def test_a_pyramids_steps_are_as_many_a_stage_as_a_check_needs_for_each_stage_of_its_scheduler() -> None:
    made = generated(Pyramid, {"prompt": "p", "num_frames": 9}, Pyramid())
    assert made["pyramid_num_inference_steps_list"] == [6, 6]
    assert "pyramid_num_inference_steps_list" not in generated(Pyramid, {"prompt": "p"}, pipe=None)  # no stages


class Chunked:  # encodes its video a chunk at a time, refusing one shorter than a chunk (Helios's pyramid)
    vae_scale_factor_temporal = 4

    def __call__(self, prompt: str, video: torch.Tensor | None = None, num_latent_frames_per_chunk: int = 9) -> None:
        pass


def test_a_video_encoded_by_chunks_has_at_least_one_chunks_frames_in_the_pipelines_temporal_compression() -> None:
    given = {"prompt": "p", "num_frames": 9, "height": 16, "width": 8}
    assert generated(Chunked, given, Chunked())["video"].shape == (1, 3, 33, 16, 8)  # (9 - 1) * 4 + 1
    assert generated(Chunked, {**given, "num_latent_frames_per_chunk": 2}, Chunked())["video"].shape[2] == 9
    assert generated(Chunked, given, pipe=None)["video"].shape[2] == 9  # no compression known: the sibling's frames


def test_a_video_whose_annotation_allows_a_list_of_pil_images_among_tensors_is_its_frames() -> None:
    """Helios's pyramid reads its video with VideoProcessor.preprocess_video, which takes a 5-D tensor as (batch,
    frames, channels, H, W): the (1, 3, frames, H, W) tensor was read as 3 frames of `frames` channels."""
    made = generated(Pyramid, {"prompt": "p", "num_frames": 9, "height": 16, "width": 8}, Pyramid())
    assert len(made["video"]) == 33 and made["video"][0].size == (8, 16)
    assert isinstance(generated(Video, {"prompt": "p", "num_frames": 5}, pipe=None)["video"], torch.Tensor)
