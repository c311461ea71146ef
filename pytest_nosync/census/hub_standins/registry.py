"""The registry: hub repository id -> the stand-in that builds it. Roughly in the order of how many of diffusers'
pipeline test modules load the repository.
"""

from __future__ import annotations

from . import diffusers_repos as pipes
from . import text_repos as text
from . import vision_language_repos as vl
from .standin import StandIn

_ALL = (
    StandIn("hf-internal-testing/tiny-random-t5", text.build_t5, "T5 config (d_model 32), T5 weights, tokenizer"),
    StandIn("hf-internal-testing/tiny-random-clip", text.build_clip, "CLIP tokenizer (<1000 ids), CLIPModel"),
    StandIn(
        "hf-internal-testing/tiny-random-Qwen2VLForConditionalGeneration",
        vl.build_qwen2_vl,
        "Qwen2 tokenizer (real special ids), Qwen2-VL processor, Qwen2VLForConditionalGeneration (width 16)",
        version=2,
    ),
    StandIn("hf-internal-testing/dummy-gemma", text.build_dummy_gemma, "Gemma tokenizer of 8 ids"),
    StandIn("hf-internal-testing/tiny-gemma3", vl.build_gemma3, "Gemma3ForConditionalGeneration (width 32), tokenizer"),
    StandIn(
        "finetrainers/dummy-hunyaunvideo",
        text.build_llama_tokenizer_subfolder,
        "Llama tokenizer (<1000 ids) in tokenizer/",
    ),
    StandIn(
        "hf-internal-testing/tiny-random-chatglm3-6b",
        text.build_chatglm3,
        "diffusers' ChatGLMModel (width 8), ChatGLMTokenizer's SentencePiece model (400 pieces)",
        requires=("sentencepiece", "diffusers"),
    ),
    StandIn("hf-internal-testing/tiny-random-BertModel", text.build_bert, "BertModel (width 32), WordPiece tokenizer"),
    StandIn(
        "huangfeice/tiny-random-Qwen3VLForConditionalGeneration",
        vl.build_qwen3_vl,
        "Qwen3-VL processor and Qwen3VLForConditionalGeneration",
        version=2,
    ),
    StandIn(
        "hf-internal-testing/Mistral-Small-3.1-24B-Instruct-2503-only-processor",
        vl.build_mistral_processor,
        "Pixtral processor: Mistral tokenizer (<32000 ids, chat template), Pixtral image processor",
    ),
    StandIn(
        "hf-internal-testing/tiny-cosmos3-modular-pipe",
        text.build_cosmos3_text_tokenizer,
        "Qwen2 tokenizer in text_tokenizer/ only (the tests build the rest)",
        version=2,
    ),
    StandIn("THUDM/glm-4-9b-chat", text.build_glm4_tokenizer, "GLM-4 tokenizer (real special ids) only", version=2),
    StandIn(
        "zai-org/GLM-Image",
        vl.build_glm_image_processor,
        "processor/ only: GlmImageProcessor of the GLM-4 tokenizer stand-in with GLM-Image's vision tokens in front "
        "(real special ids: <|dit_token_16384|> bos 16384, <sop> 167845, <|image|> 167855), a chat template written "
        "here, and an image processor for the tests' 8-pixel-patch vision tower (not the real one's); no models",
        requires=("transformers.models.glm_image",),
    ),
    StandIn("hf-internal-testing/tiny-random-umt5", text.build_umt5, "UMT5 encoder (d_model 32), T5 tokenizer"),
    StandIn("hf-internal-testing/tiny-random-roberta", text.build_roberta_tokenizer, "RoBERTa tokenizer (<1000 ids)"),
    StandIn("hf-internal-testing/llama-tokenizer", text.build_llama_tokenizer, "Llama tokenizer"),
    StandIn("hf-internal-testing/tiny-random-Gemma3ForCausalLM", text.build_gemma_tokenizer, "Gemma tokenizer"),
    StandIn("Qwen/Qwen3-Embedding-0.6B", text.build_qwen3_embedding_tokenizer, "Qwen2 tokenizer only", version=2),
    StandIn(
        "hf-internal-testing/tiny-stable-diffusion-torch",
        pipes.build_tiny_stable_diffusion,
        "StableDiffusionPipeline of tiny parts (safety checker included), PNDM scheduler",
    ),
    StandIn(
        "hf-internal-testing/tiny-stable-diffusion-xl-pipe",
        pipes.build_tiny_stable_diffusion_xl,
        "StableDiffusionXLPipeline of tiny parts, Euler scheduler",
    ),
    StandIn("hf-internal-testing/tiny-sd-pipe", pipes.build_tiny_stable_diffusion, "as tiny-stable-diffusion-torch"),
    StandIn("hf-internal-testing/tiny-controlnet", pipes.build_tiny_controlnet, "ControlNetModel for the tiny SD"),
    StandIn(
        "diffusers/consistency-models-test",
        pipes.build_consistency_models_test,
        "UNet2DModel (32x32 RGB) in test_unet/ and class-conditional in test_unet_class_cond/",
    ),
    StandIn(
        "hf-internal-testing/tiny-random-LlamaForCausalLM",
        text.build_llama_causal_lm,
        "LlamaForCausalLM (width 16, 2 layers), Llama tokenizer (<1000 ids)",
    ),
    StandIn(
        "hf-internal-testing/tiny-random-SiglipVisionModel",
        vl.build_siglip_vision,
        "SiglipVisionModel (width 32, 30-pixel images), SigLIP image processor",
    ),
    StandIn("YiYiXu/tiny-random-mclip-base", text.build_mclip_tokenizer, "XLM-RoBERTa tokenizer (<1005 ids)"),
    StandIn("hf-internal-testing/tiny-random-DPTForDepthEstimation", vl.build_dpt_processor, "DPT image processor"),
    StandIn("hf-internal-testing/tiny-random-ClapModel", vl.build_clap_feature_extractor, "CLAP feature extractor"),
    StandIn("hf-internal-testing/tiny-random-T5Model", text.build_t5, "same as tiny-random-t5"),
    StandIn("hf-internal-testing/tiny-random-T5ForConditionalGeneration", text.build_t5, "same as tiny-random-t5"),
)

STANDINS: dict[str, StandIn] = {standin.repo_id: standin for standin in _ALL}
