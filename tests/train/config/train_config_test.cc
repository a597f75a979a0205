// The training config (train/config/train_config.h): defaults, every section
// and key, command-line overrides, errors that name file:line:column and the
// key path, and TrainConfigToYaml round-tripping exactly.
#include "train/config/train_config.h"

#include <gtest/gtest.h>

#include <string>

#include "core/limits.h"
#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "tests/train/train_test_util.h"

namespace rotor::train {
namespace {

const char kModel[] =
    "model:\n"
    "  vocab_size: 257\n"
    "  hidden_size: 32\n"
    "  intermediate_size: 64\n"
    "  num_hidden_layers: 2\n"
    "  num_attention_heads: 4\n"
    "  max_position_embeddings: 512\n";

// Only what is required: the model and data.path.
const std::string kMinimal = std::string(kModel) + "data:\n  path: d\n";

// Every key of every section set to a non-default value.
const char kFull[] =
    "output_dir: out/run\n"             // line 1
    "model:\n"                          // 2
    "  vocab_size: 300\n"               // 3
    "  hidden_size: 48\n"               // 4
    "  intermediate_size: 96\n"         // 5
    "  num_hidden_layers: 3\n"          // 6
    "  num_attention_heads: 6\n"        // 7
    "  num_key_value_heads: 3\n"        // 8
    "  max_position_embeddings: 128\n"  // 9
    "  rope_theta: 50000\n"             // 10
    "  rms_norm_eps: 1.0e-6\n"          // 11
    "  tie_word_embeddings: false\n"    // 12
    "  rope_scaling: {rope_type: yarn, factor: 4.0,"
    " original_max_position_embeddings: 32}\n"  // 13
    "data:\n"                                   // 14
    "  path: some/folder\n"                     // 15
    "train:\n"                                  // 16
    "  batch_size: 3\n"                         // 17
    "  seq_len: 100\n"                          // 18
    "  gradient_accumulation_steps: 2\n"        // 19
    "  max_steps: 77\n"                         // 20
    "  lr: 3.0e-4\n"                            // 21
    "  min_lr: 3.0e-5\n"                        // 22
    "  warmup_steps: 7\n"                       // 23
    "  weight_decay: 0.01\n"                    // 24
    "  betas: [0.8, 0.99]\n"                    // 25
    "  eps: 1.0e-6\n"                           // 26
    "  clip_grad_norm: 0.5\n"                   // 27
    "  seed: 18446744073709551615\n"            // 28
    "  threads: 2\n"                            // 29
    "  loss_explosion_ratio: 0\n"               // 30
    "  resume: none\n"                          // 31
    "eval:\n"                                   // 32
    "  every_n_steps: 11\n"                     // 33
    "  max_batches: 0\n"                        // 34
    "checkpoint:\n"                             // 35
    "  every_n_steps: 0\n"                      // 36
    "  keep_last_n: 5\n"                        // 37
    "logging:\n"                                // 38
    "  log_every_n_steps: 3\n"                  // 39
    "  progress: false\n";                      // 40

TrainConfig Parse(const std::string& text,
                  const std::vector<std::string>& overrides = {}) {
  return ParseTrainConfig(text, "run.yaml", overrides);
}

// Field by field, independent of TrainConfigToYaml.
void ExpectSameConfig(const TrainConfig& a, const TrainConfig& b) {
  EXPECT_EQ(a.output_dir, b.output_dir);
  EXPECT_EQ(a.data.path, b.data.path);
  const ModelConfig &ma = a.model, &mb = b.model;
  EXPECT_EQ(ma.vocab_size, mb.vocab_size);
  EXPECT_EQ(ma.hidden_size, mb.hidden_size);
  EXPECT_EQ(ma.intermediate_size, mb.intermediate_size);
  EXPECT_EQ(ma.num_hidden_layers, mb.num_hidden_layers);
  EXPECT_EQ(ma.num_attention_heads, mb.num_attention_heads);
  EXPECT_EQ(ma.num_key_value_heads, mb.num_key_value_heads);
  EXPECT_EQ(ma.rms_norm_eps, mb.rms_norm_eps);
  EXPECT_EQ(ma.tie_word_embeddings, mb.tie_word_embeddings);
  const RopeScalingConfig &ra = ma.rope, &rb = mb.rope;
  EXPECT_EQ(ra.rope_type, rb.rope_type);
  EXPECT_EQ(ra.rope_theta, rb.rope_theta);
  EXPECT_EQ(ra.head_dim, rb.head_dim);
  EXPECT_EQ(ra.partial_rotary_factor, rb.partial_rotary_factor);
  EXPECT_EQ(ra.max_position_embeddings, rb.max_position_embeddings);
  EXPECT_EQ(ra.factor, rb.factor);
  EXPECT_EQ(ra.original_max_position_embeddings,
            rb.original_max_position_embeddings);
  EXPECT_EQ(ra.attention_factor, rb.attention_factor);
  EXPECT_EQ(ra.beta_fast, rb.beta_fast);
  EXPECT_EQ(ra.beta_slow, rb.beta_slow);
  EXPECT_EQ(ra.short_factor, rb.short_factor);
  EXPECT_EQ(ra.long_factor, rb.long_factor);
  const TrainSection &ta = a.train, &tb = b.train;
  EXPECT_EQ(ta.batch_size, tb.batch_size);
  EXPECT_EQ(ta.seq_len, tb.seq_len);
  EXPECT_EQ(ta.gradient_accumulation_steps, tb.gradient_accumulation_steps);
  EXPECT_EQ(ta.max_steps, tb.max_steps);
  EXPECT_EQ(ta.lr, tb.lr);
  EXPECT_EQ(ta.min_lr, tb.min_lr);
  EXPECT_EQ(ta.warmup_steps, tb.warmup_steps);
  EXPECT_EQ(ta.weight_decay, tb.weight_decay);
  EXPECT_EQ(ta.beta1, tb.beta1);
  EXPECT_EQ(ta.beta2, tb.beta2);
  EXPECT_EQ(ta.eps, tb.eps);
  EXPECT_EQ(ta.clip_grad_norm, tb.clip_grad_norm);
  EXPECT_EQ(ta.seed, tb.seed);
  EXPECT_EQ(ta.threads, tb.threads);
  EXPECT_EQ(ta.loss_explosion_ratio, tb.loss_explosion_ratio);
  EXPECT_EQ(ta.resume, tb.resume);
  EXPECT_EQ(ta.resume_checkpoint, tb.resume_checkpoint);
  EXPECT_EQ(a.eval.every_n_steps, b.eval.every_n_steps);
  EXPECT_EQ(a.eval.max_batches, b.eval.max_batches);
  EXPECT_EQ(a.checkpoint.every_n_steps, b.checkpoint.every_n_steps);
  EXPECT_EQ(a.checkpoint.keep_last_n, b.checkpoint.keep_last_n);
  EXPECT_EQ(a.logging.log_every_n_steps, b.logging.log_every_n_steps);
  EXPECT_EQ(a.logging.progress, b.logging.progress);
}

TEST(TrainConfig, MinimalConfigGetsEveryDefault) {
  const TrainConfig config = Parse(kMinimal);
  TrainConfig expected;
  expected.data.path = "d";
  expected.model = config.model;
  ExpectSameConfig(config, expected);
  EXPECT_EQ(config.file, "run.yaml");
  EXPECT_EQ(config.output_dir, "runs/default");
  EXPECT_EQ(config.train.resume, ResumeMode::kAuto);
  EXPECT_EQ(config.train.seq_len, 256);
  EXPECT_EQ(*config.model.hidden_size, 32);
  EXPECT_EQ(config.model.rope.head_dim, 8);
  EXPECT_FALSE(config.model.num_key_value_heads.has_value());
}

TEST(TrainConfig, ReadsEveryKeyOfEverySection) {
  const TrainConfig c = Parse(kFull);
  EXPECT_EQ(c.output_dir, "out/run");
  EXPECT_EQ(*c.model.vocab_size, 300);
  EXPECT_EQ(*c.model.num_key_value_heads, 3);
  EXPECT_EQ(*c.model.rms_norm_eps, 1e-6);
  EXPECT_EQ(*c.model.tie_word_embeddings, false);
  EXPECT_EQ(c.model.rope.rope_type, RopeType::kYarn);
  EXPECT_EQ(c.model.rope.rope_theta, 50000.0);
  EXPECT_EQ(*c.model.rope.factor, 4.0);
  EXPECT_EQ(c.data.path, "some/folder");
  const TrainSection& t = c.train;
  EXPECT_EQ(t.batch_size, 3);
  EXPECT_EQ(t.seq_len, 100);
  EXPECT_EQ(t.gradient_accumulation_steps, 2);
  EXPECT_EQ(t.max_steps, 77);
  EXPECT_EQ(t.lr, 3e-4);
  EXPECT_EQ(t.min_lr, 3e-5);
  EXPECT_EQ(t.warmup_steps, 7);
  EXPECT_EQ(t.weight_decay, 0.01);
  EXPECT_EQ(t.beta1, 0.8);
  EXPECT_EQ(t.beta2, 0.99);
  EXPECT_EQ(t.eps, 1e-6);
  EXPECT_EQ(t.clip_grad_norm, 0.5);
  EXPECT_EQ(t.seed, 18446744073709551615ull);
  EXPECT_EQ(t.threads, 2);
  EXPECT_EQ(t.loss_explosion_ratio, 0.0);
  EXPECT_EQ(t.resume, ResumeMode::kNone);
  EXPECT_EQ(c.eval.every_n_steps, 11);
  EXPECT_EQ(c.eval.max_batches, 0);
  EXPECT_EQ(c.checkpoint.every_n_steps, 0);
  EXPECT_EQ(c.checkpoint.keep_last_n, 5);
  EXPECT_EQ(c.logging.log_every_n_steps, 3);
  EXPECT_FALSE(c.logging.progress);
}

TEST(TrainConfig, ShippedConfigsParse) {
  for (const char* name : {"default.yaml", "tiny.yaml"}) {
    SCOPED_TRACE(name);
    const TrainConfig config =
        LoadTrainConfig(std::string(ROTOR_SOURCE_DIR) + "/configs/" + name);
    EXPECT_LE(config.train.seq_len, config.model.rope.max_position_embeddings);
  }
}

TEST(TrainConfig, OverridesScalarsListsNewSectionsAndModelKeys) {
  const TrainConfig c =
      Parse(kMinimal,
            {"train.lr=3e-4", "train.betas=[0.8, 0.9]", "eval.every_n_steps=7",
             "output_dir=/tmp/x", "model.hidden_size=64", "train.seq_len=128",
             "data.path=elsewhere"});
  EXPECT_EQ(c.train.lr, 3e-4);
  EXPECT_EQ(c.train.beta1, 0.8);
  EXPECT_EQ(c.train.beta2, 0.9);
  EXPECT_EQ(c.eval.every_n_steps, 7);  // eval: was absent
  EXPECT_EQ(c.output_dir, "/tmp/x");
  EXPECT_EQ(*c.model.hidden_size, 64);
  EXPECT_EQ(c.model.rope.head_dim, 16);  // follows hidden_size
  EXPECT_EQ(c.train.seq_len, 128);
  EXPECT_EQ(c.data.path, "elsewhere");
  // "null" resets a key to its default.
  EXPECT_EQ(Parse(kMinimal, {"train.seq_len=128", "train.lr=null"}).train.lr,
            TrainSection().lr);
  // A nested map value.
  const TrainConfig scaled =
      Parse(kMinimal, {"model.rope_scaling={rope_type: linear, factor: 2.0}"});
  EXPECT_EQ(scaled.model.rope.rope_type, RopeType::kLinear);
  EXPECT_EQ(*scaled.model.rope.factor, 2.0);
}

TEST(TrainConfig, ResumeIsAutoNoneOrAFolderAndRoundTrips) {
  for (const auto& [value, mode] :
       {std::pair{"auto", ResumeMode::kAuto},
        std::pair{"none", ResumeMode::kNone},
        std::pair{"runs/a/checkpoints/step_00000010",
                  ResumeMode::kCheckpoint}}) {
    SCOPED_TRACE(value);
    const TrainConfig config =
        Parse(kMinimal, {std::string("train.resume=") + value});
    EXPECT_EQ(config.train.resume, mode);
    EXPECT_EQ(config.train.resume_checkpoint,
              mode == ResumeMode::kCheckpoint ? value : "");
    const TrainConfig again =
        ParseTrainConfig(TrainConfigToYaml(config), "resolved.yaml");
    EXPECT_EQ(again.train.resume, mode);
    EXPECT_EQ(again.train.resume_checkpoint, config.train.resume_checkpoint);
  }
}

TEST(TrainConfig, ActivationCheckpointingIsNoneLayersOrEveryK) {
  for (const auto& [value, every] :
       {std::pair{"none", int64_t{0}}, std::pair{"layers", int64_t{1}},
        std::pair{"{every_k: 3}", int64_t{3}}}) {
    SCOPED_TRACE(value);
    const TrainConfig config = Parse(
        kMinimal, {std::string("train.activation_checkpointing=") + value});
    EXPECT_EQ(config.train.activation_checkpointing_every, every);
    const TrainConfig again =
        ParseTrainConfig(TrainConfigToYaml(config), "resolved.yaml");
    EXPECT_EQ(again.train.activation_checkpointing_every, every);
  }
  EXPECT_EQ(Parse(kMinimal).train.activation_checkpointing_every, 0);
  ROTOR_EXPECT_ERROR(
      Parse(kMinimal, {"train.activation_checkpointing=sometimes"}),
      "train.activation_checkpointing",
      "expected none, layers or {every_k: K}, got 'sometimes'");
  ROTOR_EXPECT_ERROR(
      Parse(kMinimal, {"train.activation_checkpointing={every_k: 0}"}),
      "train.activation_checkpointing.every_k", "must be >= 1");
  ROTOR_EXPECT_ERROR(Parse(kMinimal, {"train.activation_checkpointing={k: 2}"}),
                     "train.activation_checkpointing.k", "unknown key");
}

TEST(TrainConfig, LossChunkRowsIsReadAndWrittenBack) {
  EXPECT_EQ(Parse(kMinimal).train.loss_chunk_rows,
            nn::Transformer::kDefaultLossChunkRows);
  const TrainConfig config = Parse(kMinimal, {"train.loss_chunk_rows=256"});
  EXPECT_EQ(config.train.loss_chunk_rows, 256);
  EXPECT_EQ(ParseTrainConfig(TrainConfigToYaml(config), "resolved.yaml")
                .train.loss_chunk_rows,
            256);
  ROTOR_EXPECT_ERROR(Parse(kMinimal, {"train.loss_chunk_rows=0"}),
                     "train.loss_chunk_rows", "0");
}

TEST(TrainConfig, OverrideErrorsNameTheOverride) {
  ROTOR_EXPECT_ERROR(Parse(kMinimal, {"train.bogus=1"}),
                     "override 'train.bogus=1': train.bogus: "
                     "unknown key (known keys: activation_checkpointing, "
                     "allreduce_bucket_mb, "
                     "batch_size");
  ROTOR_EXPECT_ERROR(Parse(kMinimal, {"train.lr=fast"}),
                     "override 'train.lr=fast': train.lr: "
                     "expected a number, got 'fast'");
  ROTOR_EXPECT_ERROR(Parse(kMinimal, {"train.betas=[0.9]"}),
                     "override 'train.betas=[0.9]': train.betas: "
                     "expected a list of two numbers");
  ROTOR_EXPECT_ERROR(Parse(kMinimal, {"train.lr"}), "override 'train.lr'",
                     "not of the form key.path=value");
  ROTOR_EXPECT_ERROR(Parse(kMinimal, {"=1"}), "not of the form");
  // An empty value (say, an unset shell variable) is not silently "default".
  ROTOR_EXPECT_ERROR(Parse(kMinimal, {"output_dir="}),
                     "override 'output_dir=' has no value");
  ROTOR_EXPECT_ERROR(Parse(kMinimal, {"train..lr=1"}), "empty key");
  ROTOR_EXPECT_ERROR(Parse(kMinimal, {"data.path.x=1"}),
                     "path is not a section");
  ROTOR_EXPECT_ERROR(Parse(kMinimal, {"train.betas=[0.9"}),
                     "override 'train.betas=[0.9'", "not valid YAML");
  ROTOR_EXPECT_ERROR(Parse(kMinimal, {"bogus=1"}),
                     "override 'bogus=1': bogus: unknown key");
  ROTOR_EXPECT_ERROR(Parse(kMinimal, {"model.hidden_size=30"}),
                     "override 'model.hidden_size=30': model.hidden_size: 30 "
                     "is not divisible");
  // A problem at a key of the file that an override of another led to
  // names the file's line and that override.
  ROTOR_EXPECT_ERROR(
      Parse(kMinimal, {"model.num_attention_heads=5", "train.lr=0.1"}),
      "run.yaml:3:16: model.hidden_size: 32 is not divisible by "
      "num_attention_heads 5",
      "(after command-line overrides: model.num_attention_heads)");
}

// An override's value is the whole text after its first '=': YAML would
// cut ` #...` as a comment (output_dir=runs/exp #2 would train into
// runs/exp, resuming the run there), drop spaces around it or take quotes
// off, so such a value is refused. Lists and maps are YAML's flow style,
// where a comment is refused too.
TEST(TrainConfig, OverrideValueIsTheWholeTextAfterTheEquals) {
  for (const auto& [assignment, problem] :
       std::vector<std::pair<std::string, std::string>>{
           {"output_dir=runs/exp #2", "starts a YAML comment"},
           {"output_dir=#2", "starts a YAML comment"},
           {"output_dir=runs/exp ", "drops the spaces around it"},
           {"output_dir= runs/exp", "drops the spaces around it"},
           {"output_dir=\"runs/exp\"", "takes the quotes off"},
           {"output_dir='runs/exp'", "takes the quotes off"},
           {"output_dir=a: b", "write a list or map as [...] or {...}"},
           {"output_dir=- a", "write a list or map as [...] or {...}"},
           {"output_dir=!!str a", "write a list or map as [...] or {...}"},
           {"train.betas=[0.9, 0.99] # x", "starts a YAML comment"},
           {"train.betas=[0.9, 0.99]#x", "starts a YAML comment"},
           {"train.betas=[0.9, #x]", "starts a YAML comment"},
           {"train={lr: 0.1, lr: 0.2}", "train.lr: duplicate key"},
       }) {
    SCOPED_TRACE(assignment);
    ROTOR_EXPECT_ERROR(Parse(kMinimal, {assignment}),
                       "override '" + assignment + "': ", problem);
  }
  // What YAML reads as written is taken, as a string or a number.
  EXPECT_EQ(Parse(kMinimal, {"output_dir=runs/exp#2"}).output_dir,
            "runs/exp#2");
  EXPECT_EQ(Parse(kMinimal, {"output_dir=runs/my exp"}).output_dir,
            "runs/my exp");
  EXPECT_EQ(Parse(kMinimal, {"output_dir=it's"}).output_dir, "it's");
  EXPECT_EQ(Parse(kMinimal, {"output_dir=a:b"}).output_dir, "a:b");
  EXPECT_EQ(Parse(kMinimal, {"output_dir=100"}).output_dir, "100");
  EXPECT_EQ(Parse(kMinimal, {"train.lr=3e-4"}).train.lr, 3e-4);
  EXPECT_EQ(Parse(kMinimal, {"train.lr=~"}).train.lr, TrainSection().lr);
  // Quotes inside a flow list are YAML's, and '#' inside them is text.
  EXPECT_EQ(
      Parse(kMinimal, {"train.init_from=base", "finetune.trainable=['norm']"})
          .finetune.trainable,
      std::vector<std::string>{"norm"});
  ROTOR_EXPECT_ERROR(Parse(kMinimal, {"finetune.trainable=['a #b']"}),
                     "unknown name 'a #b'");
}

// A problem with an override's value names the override as typed, never a
// line and column: its text has none in the file.
TEST(TrainConfig, OverrideProblemsNameTheOverrideNotAFilePosition) {
  for (const auto& [assignment, problem] :
       std::vector<std::pair<std::string, std::string>>{
           {"model.hidden_size=abc",
            "override 'model.hidden_size=abc': model.hidden_size: expected a "
            "decimal integer, got 'abc'"},
           {"train.activation_checkpointing={every_k: 0}",
            "override 'train.activation_checkpointing={every_k: 0}': "
            "train.activation_checkpointing.every_k: must be >= 1, got 0"},
           {"train={lr: x}",
            "override 'train={lr: x}': train.lr: expected a number, got 'x'"},
           {"model.rope_scaling={rope_type: yarn, factor: 0.5}",
            "override 'model.rope_scaling={rope_type: yarn, factor: 0.5}': "
            "model.rope_scaling.factor"},
           {"train.betas=[&b 0.9, *b]",
            "override 'train.betas=[&b 0.9, *b]': an anchor (&name)"},
           {"train.=5", "override 'train.=5' has an empty key in its path"},
           {".lr=5", "override '.lr=5' has an empty key in its path"},
           {"finetune.lora.r=0",
            "override 'finetune.lora.r=0': finetune.lora.r: must be >= 1"},
       }) {
    SCOPED_TRACE(assignment);
    try {
      Parse(kMinimal, {assignment});
      ADD_FAILURE() << "accepted";
    } catch (const Error& error) {
      const std::string message = error.what();
      EXPECT_CONTAINS(message, problem);
      EXPECT_EQ(message.find("run.yaml:"), std::string::npos) << message;
      EXPECT_EQ(message.find("':1:"), std::string::npos) << message;
      EXPECT_EQ(message.find("after command-line overrides"), std::string::npos)
          << message;
    }
  }
}

// YAML 1.1 reads 010 as octal 8 and 0x10 as 16; a config's integers are
// decimal, and anything else is refused naming the key.
TEST(TrainConfig, IntegersAreDecimal) {
  for (const std::string& value : {"010", "0x10", "-010", "+0x1", "00"}) {
    SCOPED_TRACE(value);
    ROTOR_EXPECT_ERROR(
        Parse(kMinimal, {"train.max_steps=" + value}),
        "train.max_steps: expected a decimal integer, got '" + value + "'");
  }
  ROTOR_EXPECT_ERROR(Parse(kMinimal + "train:\n  max_steps: 010\n"),
                     "run.yaml:11:14: train.max_steps: expected a decimal "
                     "integer, got '010'");
  ROTOR_EXPECT_ERROR(Parse(kMinimal + "train:\n  seed: 0x10\n"),
                     "train.seed: expected a non-negative decimal integer");
  ROTOR_EXPECT_ERROR(
      Parse(kMinimal, {"model.num_hidden_layers=010"}),
      "model.num_hidden_layers: expected a decimal integer, got '010'");
  EXPECT_EQ(Parse(kMinimal, {"train.max_steps=10"}).train.max_steps, 10);
  EXPECT_EQ(Parse(kMinimal, {"train.max_steps=+10"}).train.max_steps, 10);
  EXPECT_EQ(Parse(kMinimal, {"train.warmup_steps=0"}).train.warmup_steps, 0);
  // A number key still takes 010 as ten: there is no octal double.
  EXPECT_EQ(Parse(kMinimal, {"train.lr=0.010"}).train.lr, 0.01);
}

// A control character in a path or name (a NUL would cut the path short
// and the message with it, a newline would split a log line) is refused,
// naming the key: in a file, as a YAML escape or raw, and in an override.
TEST(TrainConfig, ControlCharactersInPathsAndNamesAreRefused) {
  for (const auto& [line, problem] :
       std::vector<std::pair<std::string, std::string>>{
           {"output_dir: \"runs/a\\0b\"",
            "run.yaml:10:13: output_dir: holds a control character (0x00 at "
            "byte 6)"},
           {"output_dir: \"runs/a\\x00b\"", "output_dir: holds a control"},
           {"output_dir: \"a\\x7fb\"", "(0x7f at byte 1)"},
           {"train:\n  init_from: \"x\\ny\"",
            "train.init_from: holds a control character (0x0a at byte 1)"},
           {"train:\n  resume: \"x\\ty\"", "train.resume: holds a control"},
           {"data:\n  tokenizer: \"t\\ej\"", "data.tokenizer: holds a control"},
           {"finetune:\n  trainable: [\"norm\\0\"]",
            "finetune.trainable: holds a control"},
           {"output_dir: a\tb", "output_dir: holds a control character (0x09"},
           {"output_dir: a" + std::string(1, '\0') + "b",
            "run.yaml:10:14: a control character (0x00)"},
           {"output_dir: a\x01"
            "b",
            "run.yaml:10:14: a control character (0x01)"},
       }) {
    SCOPED_TRACE(line);
    // A data: line replaces kMinimal's data section.
    const bool data = line.rfind("data:", 0) == 0;
    ROTOR_EXPECT_ERROR(
        Parse(data ? kModel + line + "\n  path: d\n" : kMinimal + line + "\n"),
        problem);
  }
  ROTOR_EXPECT_ERROR(
      Parse(std::string(kModel) + "  model_type: \"llama\\0x\"\n" +
            "data:\n  path: d\n"),
      "model.model_type: holds a control character (0x00 at byte 5)");
  ROTOR_EXPECT_ERROR(Parse(kMinimal, {"output_dir=a\tb"}),
                     "override 'output_dir=a\\x09b': output_dir: holds a "
                     "control character (0x09 at byte 1)");
  ROTOR_EXPECT_ERROR(Parse(kMinimal, {std::string("data.path=a\0b", 13)}),
                     "override 'data.path=a\\x00b': data.path: holds a "
                     "control character (0x00 at byte 1)");
  ROTOR_EXPECT_ERROR(Parse(kMinimal, {"train.l\nr=1"}),
                     "override 'train.l\\x0ar=1'",
                     "holds a control character (0x0a at byte 7)");
  // The message quotes the key and value with the character escaped.
  ROTOR_EXPECT_ERROR(Parse(kMinimal + "\"a\\0b\": 1\n"),
                     "a\\x00b: unknown key");
}

// Each broken line of an otherwise valid config: the message has
// "run.yaml:LINE:COLUMN: key.path: problem".
TEST(TrainConfig, ErrorsNameFileLineColumnAndKeyPath) {
  struct Case {
    std::string yaml;
    std::vector<std::string> expected;
  };
  const std::string m = kModel;  // 7 lines
  const std::vector<Case> cases = {
      {m + "data:\n  path: d\ntrain:\n  batch_size: 8\n  bogus: 1\n",
       {"run.yaml:12:3: train.bogus: unknown key (known keys: "
        "activation_checkpointing, allreduce_bucket_mb, batch_size"}},
      {m + "data:\n  path: d\ntrain:\n  batch_size: eight\n",
       {"run.yaml:11:15: train.batch_size: expected a decimal integer, got "
        "'eight'"}},
      {m + "data:\n  path: d\ntrain:\n  batch_size: 0\n",
       {"run.yaml:11:15: train.batch_size: must be >= 1, got 0"}},
      {m + "data:\n  path: d\ntrain:\n  lr: 11\n",
       {"run.yaml:11:7: train.lr: must be in [0, 10], got 11"}},
      {m + "data:\n  path: d\ntrain:\n  lr: .nan\n",
       {"run.yaml:11:7: train.lr: expected a number, got '.nan'"}},
      {m + "data:\n  path: d\ntrain:\n  lr: 1e-3\n  min_lr: 1e-2\n",
       {"run.yaml:12:11: train.min_lr: must not exceed train.lr"}},
      {m + "data:\n  path: d\ntrain:\n  seq_len: 1024\n",
       {"run.yaml:11:12: train.seq_len: exceeds "
        "model.max_position_embeddings (512), got 1024"}},
      {m + "data:\n  path: d\ntrain:\n  betas: [0.9, 1.5]\n",
       {"run.yaml:11:16: train.betas: expected numbers in [0, 1), got '1.5'"}},
      {m + "data:\n  path: d\ntrain:\n  seed: -3\n",
       {"run.yaml:11:9: train.seed: expected a non-negative decimal "
        "integer"}},
      {m + "data:\n  path: d\ntrain:\n  resume: [a]\n",
       {"run.yaml:11:11: train.resume: expected a non-empty string"}},
      {m + "data:\n  path: d\ntrain: 5\n",
       {"run.yaml:10:8: train: expected a "
        "map of settings"}},
      {m + "data:\n  path: d\nlogging:\n  progress: maybe\n",
       {"run.yaml:11:13: logging.progress: expected true or false"}},
      {m + "data:\n  path: d\ncheckpoint:\n  keep_last_n: 0\n",
       {"run.yaml:11:16: checkpoint.keep_last_n: must be >= 1, got 0"}},
      {m + "data:\n  path: d\neval:\n  every_n_steps: -1\n",
       {"run.yaml:11:18: eval.every_n_steps: must be >= 0, got -1"}},
      {m + "data:\n  path: d\n  format: text\n",
       {"run.yaml:10:3: data.format: unknown key (known keys: "
        "document_mask, document_positions, passkey_digits, passkey_fraction, "
        "passkey_loss, path, retrieval_fraction, retrieval_tasks, "
        "tokenizer)"}},
      {m + "data:\n  path: d\n  document_mask: packed\n",
       {"run.yaml:10:18: data.document_mask: expected true or false"}},
      {m + "data:\n  path: d\n  passkey_loss: answers\n",
       {"run.yaml:10:17: data.passkey_loss: passkey loss must be 'retrieval' "
        "or 'all', got 'answers'"}},
      {m + "data:\n  path: d\nschedule: cosine\n",
       {"run.yaml:10:1: schedule: unknown key (known keys: checkpoint, data,"}},
      {m + "data:\n  path: d\n  bad: [\n", {"run.yaml:", "not valid YAML"}},
      {m, {"run.yaml: data.path is required"}},
      {"data:\n  path: d\n", {"run.yaml: the model: section is missing"}},
      {"model: [1, 2]\ndata:\n  path: d\n",
       {"run.yaml:1:8: model: expected a map of model settings", "got a list"}},
      {"model:\n  vocab_size: 10\n  hiden_size: 3\n  "
       "max_position_embeddings: 8\ndata:\n  path: d\n",
       {"run.yaml:3:3: model.hiden_size: unknown key"}},
      {"[1, 2]\n", {"run.yaml: expected a map with sections"}},
      // yaml-cpp would keep the first lr (and the model parser the last
      // hidden_size): repeated keys are errors.
      {m + "data:\n  path: d\ntrain:\n  lr: 1e-3\n  lr: 2e-3\n",
       {"run.yaml:12:3: train.lr: duplicate key (first given on line 11)"}},
      {m + "  hidden_size: 64\ndata:\n  path: d\n",
       {"run.yaml:8:3: model.hidden_size: duplicate key (first given on line "
        "3)"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.yaml);
    try {
      Parse(c.yaml);
      ADD_FAILURE() << "accepted";
    } catch (const Error& error) {
      const std::string message = error.what();
      for (const std::string& part : c.expected) {
        EXPECT_NE(message.find(part), std::string::npos)
            << "message \"" << message << "\" lacks \"" << part << "\"";
      }
    }
  }
}

// A repeated override would lose one of its values without a word.
TEST(TrainConfig, RepeatedOverrideIsRefusedNamingTheKey) {
  ROTOR_EXPECT_ERROR(Parse(kMinimal, {"train.lr=1", "train.lr=2"}),
                     "command-line override train.lr is given twice "
                     "('train.lr=1' and 'train.lr=2')");
  // Different keys of one section are fine.
  EXPECT_EQ(Parse(kMinimal, {"train.lr=0.5", "train.min_lr=0.1"}).train.lr,
            0.5);
}

// Anchors and aliases nest into exponentially large trees (the "billion
// laughs"), so they are refused while parsing, before anything is expanded;
// no config needs them.
TEST(TrainConfig, AnchorsAndAliasesAreRefusedWithoutExpanding) {
  ROTOR_EXPECT_ERROR(Parse(test::BillionLaughsYaml()),
                     "run.yaml:1:4: an anchor (&name)",
                     "rotor configs take no YAML anchors or aliases");
  // An alias needs an anchor before it, so none gets past the anchor check.
  ROTOR_EXPECT_ERROR(Parse(kMinimal + "output_dir: *x\n"),
                     "run.yaml:10:13: not valid YAML",
                     "the referenced anchor is not defined");
  ROTOR_EXPECT_ERROR(Parse(kMinimal + "train: &t {lr: 0.1}\n"),
                     "run.yaml:10:8: an anchor (&name)");
  ROTOR_EXPECT_ERROR(Parse(kMinimal, {"train=&t {lr: 0.1}"}), "anchor");
}

// YAML::Load reads the first document only; the rest would be ignored.
TEST(TrainConfig, SecondDocumentIsRefusedNamingItsLine) {
  ROTOR_EXPECT_ERROR(Parse(kMinimal + "---\ntrain:\n  lr: 0.1\n"),
                     "run.yaml:10:1: a second YAML document");
  ROTOR_EXPECT_ERROR(Parse(kMinimal + "...\n---\n"),
                     "run.yaml:11:1: a second YAML document");
  // One document, with or without its optional markers, is fine.
  EXPECT_NO_THROW(Parse("---\n" + kMinimal + "...\n"));
}

// yaml-cpp ends a quoted string left open at the end of the text; the
// config reader refuses it. Closed ones, with escaped quotes, are fine.
TEST(TrainConfig, UnclosedQuoteIsRefused) {
  ROTOR_EXPECT_ERROR(Parse(kMinimal + "output_dir: \"runs/a\n"),
                     "run.yaml:10:13: a quoted string that is never closed");
  ROTOR_EXPECT_ERROR(Parse(kMinimal + "output_dir: 'it''s\n"),
                     "run.yaml:10:13: a quoted string that is never closed");
  ROTOR_EXPECT_ERROR(Parse(kMinimal + "output_dir: \"a\\\"\n"), "never closed");
  EXPECT_EQ(Parse(kMinimal + "output_dir: \"a\\\"b\"\n").output_dir, "a\"b");
  EXPECT_EQ(Parse(kMinimal + "output_dir: 'it''s'\n").output_dir, "it's");
  EXPECT_EQ(Parse(kMinimal + "output_dir: 'x'''\n").output_dir, "x'");
}

// docs/limits.md: a config of kMaxConfigBytes is read, one byte more is
// refused, from text and from a file (which is not read past the limit).
TEST(TrainConfig, ConfigSizeLimit) {
  std::string at_limit = kMinimal + "#";
  at_limit.resize(kMaxConfigBytes - 1, 'x');
  at_limit += "\n";
  EXPECT_EQ(Parse(at_limit).data.path, "d");
  ROTOR_EXPECT_ERROR(Parse(at_limit + "\n"),
                     "run.yaml: 1048577 bytes, more than the limit of 1048576 "
                     "bytes for a config file");
  test::TempDir dir;
  EXPECT_EQ(LoadTrainConfig(dir.Write("ok.yaml", at_limit)).data.path, "d");
  const std::string big = dir.Write("big.yaml", at_limit + "\n");
  ROTOR_EXPECT_ERROR(LoadTrainConfig(big), "cannot read config file " + big,
                     "larger than the limit of 1048576 bytes");
}

TEST(TrainConfig, LoadTrainConfigNamesAMissingFile) {
  ROTOR_EXPECT_ERROR(LoadTrainConfig("/nonexistent/run.yaml"),
                     "cannot read config file /nonexistent/run.yaml");
}

TEST(TrainConfig, ToYamlRoundTripsExactly) {
  const std::vector<std::string> texts = {
      kMinimal, kFull,
      // Doubles without a short exact decimal form, a longrope list.
      std::string(kModel) +
          "  rope_scaling: {rope_type: longrope, short_factor: [1, 1.1, 1.2,"
          " 1.3], long_factor: [2, 2.5, 3, 0.1], "
          "original_max_position_embeddings: 128}\n"
          "data:\n  path: 'folder with: colon'\n"
          "train: {lr: 0.1, min_lr: 0.030000000000000002, eps: 3.3e-9, "
          "betas: [0.1, 0.7]}\n"};
  for (const std::string& text : texts) {
    SCOPED_TRACE(text);
    const TrainConfig first = Parse(text);
    const std::string yaml = TrainConfigToYaml(first);
    const TrainConfig second = ParseTrainConfig(yaml, "resolved.yaml");
    ExpectSameConfig(first, second);
    EXPECT_EQ(TrainConfigToYaml(second), yaml);
  }
  // Each number in its shortest exact form: no float noise.
  const std::string yaml = TrainConfigToYaml(Parse(texts[2]));
  EXPECT_PRED_FORMAT2(test::ContainsText, yaml, "lr: 0.1\n");
  EXPECT_PRED_FORMAT2(test::ContainsText, yaml,
                      "min_lr: 0.030000000000000002\n");
  EXPECT_PRED_FORMAT2(test::ContainsText, yaml, "eps: 3.3e-09\n");
  EXPECT_PRED_FORMAT2(test::ContainsText, yaml, "betas: [0.1, 0.7]\n");
  EXPECT_PRED_FORMAT2(test::ContainsText, yaml,
                      "long_factor: [2, 2.5, 3, 0.1]");
}

TEST(TrainConfig, PasskeyFractionAndInitFromKeys) {
  const TrainConfig config = test::TinyConfig(
      "data", "out",
      {"data.passkey_fraction=0.1", "train.init_from=runs/base",
       "train.seq_len=104", "model.max_position_embeddings=104"});
  EXPECT_EQ(config.data.passkey_fraction, 0.1);
  EXPECT_EQ(config.train.init_from, "runs/base");
  const TrainConfig round_trip =
      ParseTrainConfig(TrainConfigToYaml(config), "resolved.yaml");
  EXPECT_EQ(round_trip.data.passkey_fraction, 0.1);
  EXPECT_EQ(round_trip.train.init_from, "runs/base");
  EXPECT_EQ(test::TinyConfig("data", "out").train.init_from, "");
  EXPECT_EQ(test::TinyConfig("data", "out").data.passkey_fraction, 0.0);
  ROTOR_EXPECT_ERROR(
      test::TinyConfig("data", "out", {"data.passkey_fraction=0.1"}),
      "data.passkey_fraction", "needs train.seq_len >= 104", "got 32");
  ROTOR_EXPECT_ERROR(
      test::TinyConfig("data", "out", {"data.passkey_fraction=1.5"}),
      "data.passkey_fraction", "[0, 1]", "1.5");
}

// data.retrieval_fraction and data.retrieval_tasks: off and all four tasks
// by default, read, kept by the resolved config and compared on resume
// (the tasks only when rows are drawn from them); with the passkey rows at
// most all rows, and a task to draw from.
TEST(TrainConfig, RetrievalFractionAndTasksKeys) {
  const TrainConfig defaults = test::TinyConfig("data", "out");
  EXPECT_EQ(defaults.data.retrieval_fraction, 0.0);
  EXPECT_EQ(defaults.data.retrieval_tasks, AllRetrievalTasks());
  const TrainConfig config = test::TinyConfig(
      "data", "out",
      {"data.passkey_fraction=0.5", "data.retrieval_fraction=0.25",
       "data.retrieval_tasks=[variable_tracking, niah_single]",
       "train.seq_len=128", "model.max_position_embeddings=128"});
  EXPECT_EQ(config.data.retrieval_fraction, 0.25);
  const std::vector<RetrievalTask> tasks = {RetrievalTask::kVariableTracking,
                                            RetrievalTask::kNiahSingle};
  EXPECT_EQ(config.data.retrieval_tasks, tasks);
  const TrainConfig round_trip =
      ParseTrainConfig(TrainConfigToYaml(config), "resolved.yaml");
  EXPECT_EQ(round_trip.data.retrieval_fraction, 0.25);
  EXPECT_EQ(round_trip.data.retrieval_tasks, tasks);
  TrainConfig other = config;
  other.data.retrieval_tasks = {RetrievalTask::kNiahSingle};
  EXPECT_EQ(DataStreamDifferences(config, other),
            "data.retrieval_tasks [variable_tracking, niah_single] "
            "(checkpoint) vs [niah_single] (config)");
  other = config;
  other.data.retrieval_fraction = 0.5;
  EXPECT_EQ(DataStreamDifferences(config, other),
            "data.retrieval_fraction 0.25 (checkpoint) vs 0.5 (config)");
  TrainConfig no_rows = defaults, other_tasks = defaults;
  other_tasks.data.retrieval_tasks = tasks;
  EXPECT_EQ(DataStreamDifferences(no_rows, other_tasks), "");
  ROTOR_EXPECT_ERROR(
      test::TinyConfig(
          "data", "out",
          {"data.passkey_fraction=0.75", "data.retrieval_fraction=0.5",
           "train.seq_len=128", "model.max_position_embeddings=128"}),
      "data.retrieval_fraction",
      "must be at most 1 - data.passkey_fraction (0.75)", "got 0.5");
  ROTOR_EXPECT_ERROR(test::TinyConfig("data", "out",
                                      {"data.retrieval_fraction=0.5",
                                       "data.retrieval_tasks=[]"}),
                     "data.retrieval_tasks", "must name a task");
  ROTOR_EXPECT_ERROR(
      test::TinyConfig("data", "out", {"data.retrieval_tasks=[niah]"}),
      "data.retrieval_tasks", "unknown retrieval task 'niah'");
}

// data.passkey_digits: 5 by default, read, kept by the resolved config and
// compared on resume, and the shortest example it makes sets the shortest
// seq_len.
TEST(TrainConfig, PasskeyDigitsKey) {
  EXPECT_EQ(test::TinyConfig("data", "out").data.passkey_digits, 5);
  const TrainConfig config = test::TinyConfig(
      "data", "out",
      {"data.passkey_fraction=0.5", "data.passkey_digits=3", "train.seq_len=98",
       "model.max_position_embeddings=98"});
  EXPECT_EQ(config.data.passkey_digits, 3);
  // Other digits are other passkey rows: a run does not resume across them.
  TrainConfig five = config;
  five.data.passkey_digits = 5;
  EXPECT_EQ(DataStreamDifferences(config, five),
            "data.passkey_digits 3 (checkpoint) vs 5 (config)");
  EXPECT_EQ(ParseTrainConfig(TrainConfigToYaml(config), "resolved.yaml")
                .data.passkey_digits,
            3);
  ROTOR_EXPECT_ERROR(
      test::TinyConfig(
          "data", "out",
          {"data.passkey_fraction=0.5", "data.passkey_digits=3",
           "train.seq_len=97", "model.max_position_embeddings=97"}),
      "data.passkey_fraction", "needs train.seq_len >= 98", "got 97");
  ROTOR_EXPECT_ERROR(
      test::TinyConfig("data", "out", {"data.passkey_digits=19"}),
      "data.passkey_digits", "19");
}

// data.document_mask and data.document_positions: off by default, read,
// and kept by the resolved config.
TEST(TrainConfig, DocumentPackingKeys) {
  const TrainConfig plain = test::TinyConfig("data", "out");
  EXPECT_FALSE(plain.data.documents.mask_attention);
  EXPECT_FALSE(plain.data.documents.restart_positions);
  EXPECT_CONTAINS(TrainConfigToYaml(plain), "document_mask: false");
  for (const auto& [mask, positions] :
       {std::pair{true, false}, {false, true}, {true, true}}) {
    const TrainConfig config = test::TinyConfig(
        "data", "out",
        {std::string("data.document_mask=") + (mask ? "true" : "false"),
         std::string("data.document_positions=") +
             (positions ? "true" : "false")});
    EXPECT_EQ(config.data.documents.mask_attention, mask);
    EXPECT_EQ(config.data.documents.restart_positions, positions);
    const TrainConfig round_trip =
        ParseTrainConfig(TrainConfigToYaml(config), "resolved.yaml");
    EXPECT_EQ(round_trip.data.documents.mask_attention, mask);
    EXPECT_EQ(round_trip.data.documents.restart_positions, positions);
  }
}

// Every size key is bounded (core/limits.h, docs/limits.md), so that no
// product of sizes the code forms can wrap: one past each limit is an error
// naming the key and the limit, the limit itself is accepted.
TEST(TrainConfig, SizeKeysAreBoundedByRotorsLimits) {
  const std::vector<std::pair<std::string, int64_t>> keys = {
      {"model.vocab_size", limits::kMaxVocabSize},
      {"model.hidden_size", limits::kMaxHiddenSize},
      {"model.intermediate_size", limits::kMaxIntermediateSize},
      {"model.num_hidden_layers", limits::kMaxLayers},
      {"model.num_attention_heads", limits::kMaxHeads},
      {"model.num_key_value_heads", limits::kMaxHeads},
      {"model.head_dim", limits::kMaxHeadDim},
      {"model.max_position_embeddings", limits::kMaxPositions},
      {"train.batch_size", limits::kMaxBatchSize},
      {"train.gradient_accumulation_steps", limits::kMaxAccumulationSteps},
      {"train.max_steps", limits::kMaxSteps},
      {"train.warmup_steps", limits::kMaxSteps},
      {"train.threads", limits::kMaxThreads}};
  for (const auto& [key, limit] : keys) {
    SCOPED_TRACE(key);
    // An explicit head_dim: hidden_size need not divide by the heads.
    const auto parse = [&key = key](int64_t value) {
      std::vector<std::string> overrides = {StrCat(key, "=", value)};
      if (key != "model.head_dim") overrides.push_back("model.head_dim=8");
      return Parse(kMinimal, overrides);
    };
    EXPECT_NO_THROW(parse(limit));
    for (const int64_t value : {limit + 1, int64_t{1} << 62}) {
      ROTOR_EXPECT_ERROR(parse(value), StrCat(key, ": must be <= ", limit,
                                              " (rotor's limit), got ", value));
    }
  }
  // train.seq_len is bounded by max_position_embeddings, itself bounded.
  ROTOR_EXPECT_ERROR(Parse(kMinimal, {"train.seq_len=4611686018427387904"}),
                     "train.seq_len");
  // A derived head_dim too.
  ROTOR_EXPECT_ERROR(
      Parse(kMinimal,
            {"model.hidden_size=65536", "model.num_attention_heads=4"}),
      "model.hidden_size: 65536 / num_attention_heads 4 gives head_dim "
      "16384, more than rotor's limit of 4096");
}

// Each size is within its limit, but the run's token count is not a 64-bit
// integer.
TEST(TrainConfig, RunTokenCountMustFitInSixtyFourBits) {
  ROTOR_EXPECT_ERROR(
      Parse(kMinimal, {"train.batch_size=1048576", "train.seq_len=512",
                       "train.gradient_accumulation_steps=1048576",
                       "train.max_steps=1099511627776"}),
      "integer overflow computing the tokens of the run of run.yaml "
      "(train.batch_size * train.seq_len * "
      "train.gradient_accumulation_steps * train.max_steps)");
}

}  // namespace
}  // namespace rotor::train
