# The layers, lowest first. A file may include headers of its own layer and of the layers before
# it, never of a later one; a header in a layer's subfolder (src/formats/gguf/...) is that layer's
# own, and a public header (include/weightloader/...) belongs to the layer that implements it.
# Read by CMakeLists.txt (one library per layer) and by cmake/check_layers.cmake (the build fails
# on an upward include).
set(WL_LAYERS core families naming formats hf_cache remote loaders synth model engine convert checks cuda mpi cli python)

# Each layer's folders.
set(WL_LAYER_DIRS_core src/core)
set(WL_LAYER_DIRS_families src/families)
set(WL_LAYER_DIRS_naming src/naming)
set(WL_LAYER_DIRS_formats src/formats)
set(WL_LAYER_DIRS_hf_cache src/hf_cache)
set(WL_LAYER_DIRS_remote src/remote)
set(WL_LAYER_DIRS_loaders src/loaders)
set(WL_LAYER_DIRS_synth src/synth)
set(WL_LAYER_DIRS_model src/model)
set(WL_LAYER_DIRS_engine src/engine)
set(WL_LAYER_DIRS_convert src/convert)
set(WL_LAYER_DIRS_checks src/checks)
set(WL_LAYER_DIRS_cuda src/cuda)
set(WL_LAYER_DIRS_mpi src/mpi)
set(WL_LAYER_DIRS_cli cli)
set(WL_LAYER_DIRS_python python/bind)

# Each layer's public headers (under include/weightloader/, without .hpp).
set(WL_LAYER_HEADERS_core byte_size byte_source communicator content_digest context device dtype dtype_convert error export
    hf_download model slice_reads source tensor)
set(WL_LAYER_HEADERS_naming name_schemes)
set(WL_LAYER_HEADERS_formats format packed_shard quantize formats/custom_binary formats/gguf formats/llama2c
    formats/pytorch formats/safetensors)
set(WL_LAYER_HEADERS_hf_cache hf_cache)
set(WL_LAYER_HEADERS_remote remote)
set(WL_LAYER_HEADERS_loaders checkpoint_names load_plan loader name_mapping registry report weightloader)
set(WL_LAYER_HEADERS_synth synth)
set(WL_LAYER_HEADERS_model engine/llama_config engine/tokenizer)
set(WL_LAYER_HEADERS_engine engine/llm engine/plan)
set(WL_LAYER_HEADERS_convert convert_checkpoint)
set(WL_LAYER_HEADERS_checks diff_checkpoints verify_checkpoint)
set(WL_LAYER_HEADERS_cuda cuda)
set(WL_LAYER_HEADERS_mpi engine/mpi)
set(WL_LAYER_HEADERS_cli linked_components)
