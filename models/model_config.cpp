// Model hyper-parameter presets and the exact parameter count (formula in model_config.hpp).
#include "models/model_config.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <map>

namespace overlapsim {

const char* to_string(DType d) {
  switch (d) {
    case DType::FP32: return "fp32";
    case DType::TF32: return "tf32";
    case DType::FP16: return "fp16";
    case DType::BF16: return "bf16";
    case DType::FP8: return "fp8";
  }
  return "?";
}

int dtype_bytes(DType d) {
  switch (d) {
    case DType::FP32: return 4;
    case DType::TF32: return 4;  // TF32 is an FP32 storage format computed on tensor cores
    case DType::FP16: return 2;
    case DType::BF16: return 2;
    case DType::FP8: return 1;
  }
  return 0;
}

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::None: return "none";
    case Recompute::Selective: return "selective";
    case Recompute::Full: return "full";
  }
  return "?";
}

double ModelConfig::parameters() const {
  const double h = hidden, f = ffn_hidden, l = layers, V = vocab, s = seq_len;
  const double attention = 4 * h * h + 4 * h;      // QKV (3h² + 3h) + projection (h² + h)
  const double mlp = 2 * h * f + f + h;            // fc1 (h·f + f) + fc2 (f·h + h)
  const double layernorms = 4 * h;                 // two layernorms, scale and shift each
  const double embeddings = V * h + s * h;         // word (tied with the output layer) + position
  const double final_layernorm = 2 * h;
  return l * (attention + mlp + layernorms) + embeddings + final_layernorm;
}

namespace {

ModelConfig make(const char* name, int layers, int hidden, int heads, int ffn, int seq, int vocab) {
  ModelConfig m;
  m.name = name;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.ffn_hidden = ffn;
  m.seq_len = seq;
  m.vocab = vocab;
  m.dtype = DType::FP16;
  return m;
}

const std::map<std::string, ModelConfig>& presets() {
  static const std::map<std::string, ModelConfig> table = [] {
    std::map<std::string, ModelConfig> t;
    // GPT-3 175B: Brown et al., "Language Models are Few-Shot Learners", NeurIPS 2020,
    // Table 2.1 (n_layers 96, d_model 12288, n_heads 96, d_head 128, n_ctx 2048; d_ff = 4·d_model
    // per §2.1). The GPT-2 BPE vocabulary has 50,257 tokens; Megatron-LM pads it to a multiple of
    // make-vocab-size-divisible-by (128) × TP (8) = 1024, i.e. 51,200, which we use here.
    t["gpt3-175b"] = make("gpt3-175b", 96, 12288, 96, 4 * 12288, 2048, 51200);
    // Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
    // Megatron-LM", SC'21, Table 1: sequence length 2048, vocabulary 51,200, ffn = 4h, fp16.
    // Table 1 prints 1.7B for this row; the exact count of these hyper-parameters is 1.65B.
    t["megatron-1.7b"] = make("megatron-1.7b", 24, 2304, 24, 4 * 2304, 2048, 51200);
    t["megatron-18.4b"] = make("megatron-18.4b", 40, 6144, 48, 4 * 6144, 2048, 51200);
    t["megatron-145.6b"] = make("megatron-145.6b", 80, 12288, 96, 4 * 12288, 2048, 51200);
    return t;
  }();
  return table;
}

}  // namespace

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const auto& [name, config] : presets()) names.push_back(name);
  return names;  // std::map keeps them sorted
}

const ModelConfig& model_preset(const std::string& name) {
  const auto& table = presets();
  auto it = table.find(name);
  if (it == table.end()) {
    std::string known;
    for (const auto& n : model_preset_names()) known += (known.empty() ? "" : ", ") + n;
    throw InputError("expected a model preset (" + known + "), found '" + name + "'");
  }
  return it->second;
}

}  // namespace overlapsim
