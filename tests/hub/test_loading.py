"""Each stand-in loads through a real `from_pretrained` while offline, with ids and widths the tests rely on."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from pytest_nosync.census.hub_standins import STANDINS, hub_standins

PROMPT = "A painting of a squirrel eating a burger, zq!"


@dataclass(frozen=True)
class Expectation:
    """How diffusers' tests load a repository, and the bound its token ids must stay under."""

    load: Callable[[str], dict]  # repo id -> loaded objects by name ("tokenizer", "model", "config", ...)
    max_ids: int  # the vocabulary of the text models the tests build around the tokenizer
    check: Callable[[dict], None] = lambda loaded: None


def _auto_tokenizer(repo: str, **kw) -> dict:
    from transformers import AutoTokenizer

    return {"tokenizer": AutoTokenizer.from_pretrained(repo, **kw)}


def _t5(repo: str) -> dict:
    from transformers import AutoConfig, T5EncoderModel, T5TokenizerFast

    return {
        "config": AutoConfig.from_pretrained(repo),
        "model": T5EncoderModel.from_pretrained(repo),
        "tokenizer": T5TokenizerFast.from_pretrained(repo),
        **_auto_tokenizer(repo),
    }


def _check_t5(loaded: dict) -> None:
    assert loaded["config"].d_model == 32  # the dummy transformers' joint_attention_dim / text_dim
    ids = loaded["tokenizer"](PROMPT, return_tensors="pt").input_ids
    assert loaded["model"](ids).last_hidden_state.shape == (1, ids.shape[1], 32)
    assert loaded["tokenizer"].convert_tokens_to_ids("<extra_id_0>") < loaded["config"].vocab_size


def _umt5(repo: str) -> dict:
    from transformers import UMT5EncoderModel

    return {"model": UMT5EncoderModel.from_pretrained(repo), **_auto_tokenizer(repo)}


def _check_umt5(loaded: dict) -> None:
    ids = loaded["tokenizer"](PROMPT, return_tensors="pt").input_ids
    assert loaded["model"](ids).last_hidden_state.shape[-1] == 32


def _clip(repo: str) -> dict:
    from transformers import CLIPModel, CLIPTokenizer

    return {"tokenizer": CLIPTokenizer.from_pretrained(repo), "model": CLIPModel.from_pretrained(repo)}


def _check_clip(loaded: dict) -> None:
    tokenizer = loaded["tokenizer"]
    assert tokenizer.model_max_length == 77
    ids = tokenizer(PROMPT, padding="max_length", max_length=77, return_tensors="pt").input_ids
    assert ids[0, 0] == tokenizer.bos_token_id and tokenizer.eos_token_id == max(tokenizer.get_vocab().values())
    # Shapes, not a forward pass: under the emulated device that the repository's conftest installs, from_pretrained
    # leaves non-persistent buffers (CLIP's and BERT's position ids) uninitialized.
    text = loaded["model"].text_model.embeddings
    assert (text.token_embedding.num_embeddings, text.position_embedding.num_embeddings) == (1000, 77)
    assert int(ids.max()) < 1000 and loaded["model"].text_projection.out_features == 64


def _qwen2_vl(repo: str) -> dict:
    from transformers import Qwen2Tokenizer, Qwen2TokenizerFast, Qwen2VLForConditionalGeneration

    return {
        "tokenizer": Qwen2Tokenizer.from_pretrained(repo),
        "fast": Qwen2TokenizerFast.from_pretrained(repo),
        "model": Qwen2VLForConditionalGeneration.from_pretrained(repo),
    }


def _check_qwen(loaded: dict) -> None:
    tokenizer = loaded["tokenizer"]
    assert tokenizer.convert_tokens_to_ids("<|image_pad|>") == 151655
    assert tokenizer.convert_tokens_to_ids("<|vision_start|>") == 151652
    text = tokenizer.apply_chat_template([{"role": "user", "content": "dance monkey"}], tokenize=False)
    assert "<|im_start|>user\ndance monkey<|im_end|>" in text
    if "model" in loaded:
        ids = tokenizer(text, return_tensors="pt").input_ids
        out = loaded["model"](input_ids=ids, output_hidden_states=True)
        assert out.hidden_states[-1].shape[-1] == 16  # EasyAnimate's dummy text_embed_dim


def _qwen3_vl(repo: str) -> dict:
    from transformers import AutoTokenizer, Qwen3VLForConditionalGeneration

    return {
        "tokenizer": AutoTokenizer.from_pretrained(repo),
        "model": Qwen3VLForConditionalGeneration.from_pretrained(repo),
    }


def _gemma(repo: str) -> dict:
    from transformers import GemmaTokenizer

    return {"tokenizer": GemmaTokenizer.from_pretrained(repo), **{"auto": _auto_tokenizer(repo)["tokenizer"]}}


def _check_dummy_gemma(loaded: dict) -> None:
    assert len(loaded["tokenizer"]) <= 8  # the dummy Gemma2 text encoders of the tests have vocab_size=8


def _gemma3(repo: str) -> dict:
    from transformers import Gemma3ForConditionalGeneration

    return {"model": Gemma3ForConditionalGeneration.from_pretrained(repo), **_auto_tokenizer(repo)}


def _check_gemma3(loaded: dict) -> None:
    assert loaded["model"].config.text_config.hidden_size == 32  # LTX-2's connectors: 4 heads x 8
    ids = loaded["tokenizer"](PROMPT, return_tensors="pt").input_ids
    out = loaded["model"](input_ids=ids, output_hidden_states=True)
    assert len(out.hidden_states) == loaded["model"].config.text_config.num_hidden_layers + 1


def _llama_subfolder(repo: str) -> dict:
    from transformers import LlamaTokenizer, LlamaTokenizerFast

    return {
        "tokenizer": LlamaTokenizer.from_pretrained(repo, subfolder="tokenizer"),
        "fast": LlamaTokenizerFast.from_pretrained(repo, subfolder="tokenizer"),
    }


def _bert(repo: str) -> dict:
    from transformers import BertModel

    return {"model": BertModel.from_pretrained(repo), **_auto_tokenizer(repo)}


def _check_bert(loaded: dict) -> None:
    embeddings = loaded["model"].embeddings.word_embeddings  # shapes only: see _check_clip
    assert embeddings.embedding_dim == 32 and embeddings.num_embeddings == len(loaded["tokenizer"])


def _roberta(repo: str) -> dict:
    from transformers import RobertaTokenizer

    return {"tokenizer": RobertaTokenizer.from_pretrained(repo, model_max_length=77)}


def _consistency_unets(repo: str) -> dict:
    from diffusers import UNet2DModel

    return {
        "unet": UNet2DModel.from_pretrained(repo, subfolder="test_unet"),
        "class_cond": UNet2DModel.from_pretrained(repo, subfolder="test_unet_class_cond"),
    }


def _check_consistency_unets(loaded: dict) -> None:
    sample = torch.zeros(1, 3, 32, 32)
    assert loaded["unet"](sample, 1).sample.shape == sample.shape
    assert loaded["class_cond"](sample, 1, class_labels=torch.tensor([0])).sample.shape == sample.shape


def _llama_causal_lm(repo: str) -> dict:
    from transformers import LlamaForCausalLM

    return {"model": LlamaForCausalLM.from_pretrained(repo), **_auto_tokenizer(repo)}


def _check_llama_causal_lm(loaded: dict) -> None:
    config = loaded["model"].config
    assert (config.hidden_size, config.num_hidden_layers) == (16, 2)  # HiDream: caption_channels[1], llama_layers


def _siglip(repo: str) -> dict:
    from transformers import SiglipImageProcessor, SiglipVisionModel

    return {
        "processor": SiglipImageProcessor.from_pretrained(repo, size={"height": 30, "width": 30}),
        "model": SiglipVisionModel.from_pretrained(repo),
    }


def _check_siglip(loaded: dict) -> None:
    from PIL import Image

    pixels = loaded["processor"](Image.new("RGB", (40, 40)), return_tensors="pt").pixel_values
    assert pixels.shape == (1, 3, 30, 30)
    assert loaded["model"].config.hidden_size == 32  # FramePack's image_proj_dim


def _xlm_roberta(repo: str) -> dict:
    from transformers import XLMRobertaTokenizerFast

    return {"tokenizer": XLMRobertaTokenizerFast.from_pretrained(repo)}


def _feature_extractors(repo: str) -> dict:
    from transformers import AutoFeatureExtractor, AutoImageProcessor

    if "Clap" in repo:
        return {"extractor": AutoFeatureExtractor.from_pretrained(repo, hop_length=7900)}
    return {"extractor": AutoImageProcessor.from_pretrained(repo)}


def _check_feature_extractor(loaded: dict) -> None:
    extractor = loaded["extractor"]
    assert getattr(extractor, "feature_size", None) == 8 or extractor.size == {"height": 32, "width": 32}


def _sd_pipeline(repo: str) -> dict:
    from diffusers import DiffusionPipeline, PNDMScheduler

    pipe = DiffusionPipeline.from_pretrained(repo)
    return {
        "pipe": pipe,
        "tokenizer": pipe.tokenizer,
        "scheduler": PNDMScheduler.from_config(repo, subfolder="scheduler"),
    }


def _check_sd_pipeline(loaded: dict) -> None:
    pipe = loaded["pipe"]
    assert type(pipe).__name__ == "StableDiffusionPipeline" and pipe.safety_checker is not None
    assert pipe.text_encoder.config.hidden_size == pipe.unet.config.cross_attention_dim == 32


def _check_sd_pipeline_runs(loaded: dict) -> None:
    """A 2-step call with classifier-free guidance, and the tiny ControlNet built into a ControlNet pipeline."""
    from diffusers import ControlNetModel, StableDiffusionControlNetPipeline

    _check_sd_pipeline(loaded)
    pipe = loaded["pipe"]
    # Prompt embeddings and no safety checker for the call: see _check_clip on CLIP models under the emulation.
    pipe.safety_checker = None
    pipe.set_progress_bar_config(disable=True)
    embeds = torch.randn(1, 77, 32)
    call = {"num_inference_steps": 2, "height": 32, "width": 32, "output_type": "pt"}
    assert pipe(prompt_embeds=embeds, negative_prompt_embeds=embeds, **call).images.shape == (1, 3, 32, 32)
    controlnet = ControlNetModel.from_pretrained("hf-internal-testing/tiny-controlnet")
    StableDiffusionControlNetPipeline(**pipe.components, controlnet=controlnet)


def _sdxl_pipeline(repo: str) -> dict:
    from diffusers import DiffusionPipeline

    pipe = DiffusionPipeline.from_pretrained(repo)
    return {"pipe": pipe, "tokenizer": pipe.tokenizer, "tokenizer_2": pipe.tokenizer_2}


def _check_sdxl_pipeline(loaded: dict) -> None:
    pipe = loaded["pipe"]
    assert type(pipe).__name__ == "StableDiffusionXLPipeline"
    unet = pipe.unet  # one UNet step with SDXL's conditioning: the two CLIP widths and six time ids
    text_time = {"text_embeds": torch.randn(1, 32), "time_ids": torch.zeros(1, 6)}
    sample = torch.randn(1, 4, 4, 4)
    out = unet(sample, 1, encoder_hidden_states=torch.randn(1, 77, 64), added_cond_kwargs=text_time).sample
    assert out.shape == sample.shape


def _controlnet(repo: str) -> dict:
    from diffusers import ControlNetModel

    return {"controlnet": ControlNetModel.from_pretrained(repo)}


def _check_controlnet(loaded: dict) -> None:
    assert loaded["controlnet"].config.cross_attention_dim == 32


def _check_mistral_chat(loaded: dict) -> None:
    tokenizer = loaded["tokenizer"]  # the processor itself needs torchvision, as the real repository's does
    messages = [
        [
            {"role": "system", "content": [{"type": "text", "text": "You are an AI."}]},
            {"role": "user", "content": [{"type": "text", "text": "a cat"}]},
        ]
    ]
    inputs = tokenizer.apply_chat_template(
        messages, tokenize=True, return_dict=True, return_tensors="pt", padding="max_length", max_length=64
    )
    assert inputs["input_ids"].shape == (1, 64) and int(inputs["input_ids"].max()) < 32000
    assert tokenizer.convert_tokens_to_ids("[IMG]") < 32000


def _cosmos3(repo: str) -> dict:
    return _auto_tokenizer(repo, subfolder="text_tokenizer")


def _glm4(repo: str) -> dict:
    return _auto_tokenizer(repo, trust_remote_code=True)  # no auto_map: nothing remote is asked for


def _check_glm4(loaded: dict) -> None:
    tokenizer = loaded["tokenizer"]
    assert tokenizer.pad_token_id == 151329 and tokenizer.convert_tokens_to_ids("<|user|>") == 151336


def _glm_image(repo: str) -> dict:
    from transformers import AutoTokenizer, GlmImageProcessor

    return {
        "processor": GlmImageProcessor.from_pretrained(repo, subfolder="processor"),
        "tokenizer": AutoTokenizer.from_pretrained(repo, subfolder="processor"),
    }


def _check_glm_image(loaded: dict) -> None:
    processor = loaded["processor"]  # what the pipeline relies on is checked in test_glm_image_processor
    assert processor.image_token_id == 167855 and loaded["tokenizer"].bos_token_id == 16384


def _chatglm3(repo: str) -> dict:
    from diffusers.pipelines.kolors import ChatGLMModel, ChatGLMTokenizer

    return {"tokenizer": ChatGLMTokenizer.from_pretrained(repo), "model": ChatGLMModel.from_pretrained(repo)}


def _check_chatglm3(loaded: dict) -> None:
    tokenizer, model = loaded["tokenizer"], loaded["model"]
    inputs = tokenizer([PROMPT], padding="max_length", max_length=16, truncation=True, return_tensors="pt")
    assert int(inputs.input_ids.max()) < model.config.padded_vocab_size
    out = model(
        input_ids=inputs.input_ids,
        attention_mask=inputs.attention_mask,
        position_ids=inputs.position_ids,
        output_hidden_states=True,
    )
    assert out.hidden_states[-2].shape == (16, 1, 8)  # Kolors' cross_attention_dim
    assert torch.isfinite(out.hidden_states[-1]).all()


EXPECTATIONS: dict[str, Expectation] = {
    "hf-internal-testing/tiny-random-t5": Expectation(_t5, 1000, _check_t5),
    "hf-internal-testing/tiny-random-T5Model": Expectation(_t5, 1000, _check_t5),
    "hf-internal-testing/tiny-random-T5ForConditionalGeneration": Expectation(_t5, 1000, _check_t5),
    "hf-internal-testing/Mistral-Small-3.1-24B-Instruct-2503-only-processor": Expectation(
        _auto_tokenizer, 32000, _check_mistral_chat
    ),
    "hf-internal-testing/tiny-cosmos3-modular-pipe": Expectation(_cosmos3, 151657, _check_qwen),
    "THUDM/glm-4-9b-chat": Expectation(_glm4, 151552, _check_glm4),
    "zai-org/GLM-Image": Expectation(_glm_image, 168064, _check_glm_image),
    "hf-internal-testing/tiny-random-umt5": Expectation(_umt5, 1000, _check_umt5),
    "hf-internal-testing/tiny-random-clip": Expectation(_clip, 1000, _check_clip),
    "hf-internal-testing/tiny-random-Qwen2VLForConditionalGeneration": Expectation(_qwen2_vl, 151936, _check_qwen),
    "huangfeice/tiny-random-Qwen3VLForConditionalGeneration": Expectation(_qwen3_vl, 151936, _check_qwen),
    "Qwen/Qwen3-Embedding-0.6B": Expectation(_auto_tokenizer, 151936, _check_qwen),
    "hf-internal-testing/dummy-gemma": Expectation(_gemma, 8, _check_dummy_gemma),
    "hf-internal-testing/tiny-random-Gemma3ForCausalLM": Expectation(_gemma, 1000),
    "hf-internal-testing/tiny-gemma3": Expectation(_gemma3, 1000, _check_gemma3),
    "finetrainers/dummy-hunyaunvideo": Expectation(_llama_subfolder, 1000),
    "hf-internal-testing/llama-tokenizer": Expectation(_auto_tokenizer, 1000),
    "hf-internal-testing/tiny-random-chatglm3-6b": Expectation(_chatglm3, 512, _check_chatglm3),
    "hf-internal-testing/tiny-random-BertModel": Expectation(_bert, 1000, _check_bert),
    "hf-internal-testing/tiny-random-roberta": Expectation(_roberta, 1000),
    "hf-internal-testing/tiny-random-LlamaForCausalLM": Expectation(_llama_causal_lm, 1000, _check_llama_causal_lm),
    "hf-internal-testing/tiny-random-SiglipVisionModel": Expectation(_siglip, 0, _check_siglip),
    "YiYiXu/tiny-random-mclip-base": Expectation(_xlm_roberta, 1005),
    "hf-internal-testing/tiny-random-DPTForDepthEstimation": Expectation(
        _feature_extractors, 0, _check_feature_extractor
    ),
    "hf-internal-testing/tiny-random-ClapModel": Expectation(_feature_extractors, 0, _check_feature_extractor),
    "hf-internal-testing/tiny-stable-diffusion-torch": Expectation(_sd_pipeline, 1000, _check_sd_pipeline_runs),
    "hf-internal-testing/tiny-sd-pipe": Expectation(_sd_pipeline, 1000, _check_sd_pipeline),
    "hf-internal-testing/tiny-stable-diffusion-xl-pipe": Expectation(_sdxl_pipeline, 1000, _check_sdxl_pipeline),
    "hf-internal-testing/tiny-controlnet": Expectation(_controlnet, 0, _check_controlnet),
    "diffusers/consistency-models-test": Expectation(_consistency_unets, 0, _check_consistency_unets),
}


def test_every_standin_has_an_expectation() -> None:
    assert set(EXPECTATIONS) == set(STANDINS)


@pytest.mark.parametrize("repo_id", list(EXPECTATIONS))
def test_standin_loads_offline(repo_id: str, standin_root: Path, empty_offline_hub: Path) -> None:
    expectation = EXPECTATIONS[repo_id]
    for module in STANDINS[repo_id].requires:
        pytest.importorskip(module)
    with hub_standins(standin_root, offline=True) as installation:
        assert repo_id in installation.stood_in
        loaded = expectation.load(repo_id)
        tokenizers = [obj for obj in loaded.values() if hasattr(obj, "convert_tokens_to_ids")]
        for tokenizer in tokenizers:
            ids = tokenizer(PROMPT).input_ids
            if not repo_id.endswith("dummy-gemma"):  # 8 ids: nearly everything is unknown there, as the tests want
                assert ids.count(tokenizer.unk_token_id) < len(ids) / 2
            assert max(ids) < expectation.max_ids, f"{type(tokenizer).__name__} ids exceed the model vocabulary"
            assert tokenizer.model_max_length < 10**6  # an empty fallback tokenizer has an unbounded one
        expectation.check(loaded)


def test_an_absent_repo_is_not_served_without_its_standin(standin_root: Path, empty_offline_hub: Path) -> None:
    from transformers import AutoConfig

    with (
        hub_standins(standin_root, offline=True, repos=["hf-internal-testing/tiny-random-clip"]),
        pytest.raises(OSError),
    ):
        AutoConfig.from_pretrained("hf-internal-testing/tiny-random-t5")
