// ARENAPLAN_CASCADE: a chain of int8 or int16x8 operators computed row by row, each
// intermediate tensor kept as a ring of rows in one scratch buffer. The format
// (custom options, chain blob, ring layout, row order) is arenaplan's
// docs/cascade.md; this file follows it word for word.
//
// Memory. Persistent: one OpData, 4 bytes (the scratch buffers' handles) whatever
// the chain: the chain is read in place from the custom options (in Prepare and in
// each Eval) and the quantisation data from constant tensors. Arena: the scratch
// buffer of the blob's header (the rings, the MEAN_ROWS sums), and in CMSIS-NN
// builds the work buffer. Eval's stack: next[] (4 bytes per stage, at most
// kMaxStages) and one small frame per level of the pull recursion
// Make -> Compute -> Make (depth <= 2 x stages); a
// stage record is decoded (160 bytes) only in the row functions, which are leaves
// (in CMSIS-NN builds they call CMSIS-NN, whose frames come on top).
//
// Arithmetic. That of TFLM's reference int8 kernels (reference_integer_ops::
// ConvPerChannel, DepthwiseConvPerChannel, AveragePool, MaxPool, AddFunc, Mul;
// reference_ops::Pad, SubElementwise, QuantizeLeakyRelu, MaximumMinimumBroadcastSlow,
// QuantizedMeanOrSum; ReluQuantized, Relu6Quantized; a constant operand as the
// broadcast kernels read it), with TFLM's own MultiplyByQuantizedMultiplier*, so each
// stage's output is bit-identical to the operator it replaced; int16 stages (int16
// activations, int8 weights: element_type 1) take the int16x8 paths of the same
// kernels (section "int16 stages"). In a CMSIS-NN build (CMSIS_NN defined),
// CONV_2D and DEPTHWISE_CONV_2D run by the CMSIS-NN functions TFLM's CMSIS-NN
// kernels call (int8: the s8 wrappers; int16: arm_convolve_wrapper_s16,
// arm_depthwise_conv_s16) on windows of rows, as those kernels run the whole
// operators (section "CMSIS-NN builds" below); a second scratch buffer, the work
// buffer, holds copies of windows and CMSIS-NN's own buffer.

#include "arenaplan_cascade.h"

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "flatbuffers/flexbuffers.h"
#include "tensorflow/lite/c/common.h"
#include "tensorflow/lite/kernels/internal/common.h"
#include "tensorflow/lite/kernels/kernel_util.h"
#include "tensorflow/lite/micro/kernels/kernel_util.h"
#include "tensorflow/lite/micro/micro_context.h"
#include "tensorflow/lite/micro/micro_log.h"

#if defined(CMSIS_NN)  // TFLM's Makefile defines it with OPTIMIZED_KERNEL_DIR=cmsis_nn
#include "Include/arm_nnfunctions.h"
#include "Include/arm_nnsupportfunctions.h"  // MAX_COL_COUNT, arm_nn_requantize
#endif

namespace tflite {
namespace {

// ---------------------------------------------------------------------------
// The chain blob: little-endian int32 words, a header then one record per stage.

constexpr int32_t kFormatVersion = 2;  // header word 0 and the options' "version"
constexpr int kHeaderWords = 4;
constexpr int kStageWords = 48;
constexpr int kMaxStages = 64;  // next[] is on Eval's stack: 4 bytes per stage

enum HeaderWord { kHVersion = 0, kHStages = 1, kHScratchBytes = 2, kHStageWords = 3 };

enum Kind : int32_t {
  kConv = 1,
  kDepthwise = 2,
  kAvgPool = 3,
  kMaxPool = 4,
  kAdd = 5,
  kPad = 6,
  kMeanRows = 7,
  kRelu = 8,
  kRelu6 = 9,
  kLeakyRelu = 10,
  kMul = 11,
  kSub = 12,
  kMinimum = 13,
  kMaximum = 14,
  kMean = 15,
  kTransposeConv = 20,  // int16 only: output row y gathers the input rows that reach it
  kConcat = 21,         // CONCATENATION: each pixel src0's in_c then src1's out_c - in_c
  kQuantize = 22,       // QUANTIZE requantising within a type: RELU's formula, no RELU
};

// Kinds of two operands: the second is src1 (row y of both sources makes output row
// y), or a constant (const_in, src1 -1; never for CONCATENATION).
inline bool TwoInputs(int32_t kind) {
  return kind == kAdd || kind == kMul || kind == kSub || kind == kMinimum || kind == kMaximum ||
         kind == kConcat;
}

// Kinds that sum every row of their input for their one output row.
inline bool WholeInput(int32_t kind) { return kind == kMeanRows || kind == kMean; }

// Kinds whose output row y reads row y of src0 (and of src1) only.
inline bool Elementwise(int32_t kind) {
  return TwoInputs(kind) || kind == kRelu || kind == kRelu6 || kind == kLeakyRelu ||
         kind == kQuantize;
}

// The words of a stage record (docs/cascade.md, "stage record").
enum Field {
  kKind = 0,
  kSrc0,             // -1 - k: the operator's input k (whole); j >= 0: stage j's output
  kSrc1,             // the second input of TwoInputs kinds, same coding; -1 for others
  kInH,              // shape of src0 (and src1): rows, columns, channels
  kInW,
  kInC,
  kOutH,             // shape of the stage's output
  kOutW,
  kOutC,
  kFilterH,          // window of convolutions and pools (1 otherwise)
  kFilterW,
  kStrideH,
  kStrideW,
  kDilationH,
  kDilationW,
  kPadTop,           // TFLM's computed padding; PAD: rows/columns before
  kPadLeft,
  kDepthMultiplier,
  kFilter,           // input indices of the constants, -1 none
  kBias,
  kQuant,
  kInputOffset,      // minus src0's zero point
  kOutputOffset,     // the output's zero point
  kActMin,           // clamp of the output
  kActMax,
  kRingRows,         // slots of the output ring; 0 for the last stage
  kRingOffset,       // bytes from the scratch start, a multiple of 4
  kAccOffset,        // MEAN_ROWS, MEAN: bytes of their int32[out_c] sums; a constant
                     // operand not read in place: bytes of its row spread; -1 otherwise
  kInput2Offset,     // ADD, SUB, MUL: minus the second operand's zero point
  kLeftShift,        // ADD, SUB
  kInput1Multiplier,  // ADD, SUB
  kInput1Shift,
  kInput2Multiplier,  // ADD, SUB; LEAKY_RELU: the alpha branch's
  kInput2Shift,
  kOutputMultiplier,  // ADD, SUB, MUL, RELU, MEAN; LEAKY_RELU: the identity branch's
  kOutputShift,
  kPadValue,         // PAD: the int8 value of the rows and columns added
  kBlockRows,        // rows computed per step (0 or 1: one; MEAN_ROWS: 0 or 1)
  kConvPath,         // 38: how a convolution's steps run (ConvPath; 0 otherwise)
  kReserved2,        // 39: reserved, 0
  kConstInput,       // 40: input index of a constant operand, -1 none (then src1 is -1)
  kConstStrideH,     // 41..43: its element strides per output row, column, channel (0:
                     // broadcast)
  kConstStrideW,
  kConstStrideC,
  kConstFirst,       // 44: 1 when the constant is the operator's first input
  kElementType,      // 45: the stage's activations: ElementType
  kAcc32,            // 46: int16 CONV_2D: 1 when TFLM's reference kernel sums in int32
  kColumns,          // 47: 1 along the columns of one-row tensors (every stage alike)
};
static_assert(kColumns + 1 == kStageWords, "a stage record is 48 words");

// The element type of a stage's activations (its sources', its output's, its ring's).
enum ElementType : int32_t { kInt8 = 0, kInt16 = 1 };

// Bytes of an element of `element_type` (Prepare admits kInt8 and kInt16 only).
inline int32_t ElementBytes(int32_t element_type) { return element_type == kInt16 ? 2 : 1; }

// The tensor type of an element type, and the range of its values.
inline TfLiteType TensorType(int32_t element_type) {
  return element_type == kInt16 ? kTfLiteInt16 : kTfLiteInt8;
}
inline int32_t TypeMin(int32_t element_type) { return element_type == kInt16 ? INT16_MIN : INT8_MIN; }
inline int32_t TypeMax(int32_t element_type) { return element_type == kInt16 ? INT16_MAX : INT8_MAX; }
inline bool InType(int32_t value, int32_t element_type) {
  return value >= TypeMin(element_type) && value <= TypeMax(element_type);
}

// Word 38 of a convolution: which code computes its steps (docs/cascade.md). The
// arithmetic is the same integer sum every way, requantised by the same function.
enum ConvPath : int32_t {
  kPathWrapper = 0,    // CMSIS-NN builds: the wrapper TFLM's kernel calls; else reference
  kPathIm2col = 1,     // CONV_2D: CMSIS-NN's arm_convolve_s8 itself (no per-call filter
                       // sums); else reference
  kPathPointwise = 2,  // CONV_2D 1x1, stride 1, no padding: the bias word names the
                       // folded bias (bias + input_offset * sum of the filter's channel),
                       // no input offset is added; CMSIS-NN builds: PointwisePixels
};

// The little-endian int32 at p (the blob has any alignment). On a little-endian
// machine one (unaligned) load: the blob is read again at every step of Eval.
inline int32_t LoadWord(const uint8_t* p) {
  int32_t value;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  std::memcpy(&value, p, sizeof value);
#else
  const uint32_t u = static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
                     (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
  std::memcpy(&value, &u, sizeof value);
#endif
  return value;
}

inline int32_t Header(const uint8_t* blob, HeaderWord word) { return LoadWord(blob + 4 * word); }

inline int32_t Word(const uint8_t* blob, int32_t stage, Field field) {
  return LoadWord(blob + 4 * (kHeaderWords + kStageWords * stage + field));
}

// One stage record, decoded; used only in leaf functions (192 bytes of stack).
struct Stage {
  int32_t words[kStageWords];
  int32_t operator[](Field field) const { return words[field]; }
};

void Decode(const uint8_t* blob, int32_t stage, Stage* out) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  std::memcpy(out->words, blob + 4 * (kHeaderWords + kStageWords * stage), sizeof out->words);
#else
  for (int f = 0; f < kStageWords; ++f) out->words[f] = Word(blob, stage, static_cast<Field>(f));
#endif
}

// The kernel's persistent record: 4 bytes whatever the chain and the build
// (arenaplan's model of TFLM's persistent arena, tflm/kernels/cascade.py, counts
// exactly this). TFLM's scratch handles count requests, far below 2^15.
struct OpData {
  int16_t scratch_index;  // TFLM's handle of the scratch buffer, -1 when none
  int16_t work_index;     // CMSIS-NN builds: the work buffer's handle, -1 when none
};
static_assert(sizeof(OpData) == 4, "OpData is two int16");

// The chain as the custom options hold it (read in place, never copied).
struct Chain {
  const uint8_t* blob;    // the chain blob, inside the model's custom options
  int32_t stages;         // 1 .. kMaxStages
  int32_t scratch_bytes;  // the scratch buffer's size (0: none)
};

// ---------------------------------------------------------------------------
// Prepare: every check, one line each on failure.

bool Fail(const char* what) {
  MicroPrintf("ARENAPLAN_CASCADE: %s", what);
  return false;
}

bool FailStage(int32_t stage, const char* what) {
  MicroPrintf("ARENAPLAN_CASCADE: stage %d: %s", static_cast<int>(stage), what);
  return false;
}

// The options {"version": 2, "chain": blob} and the blob's header, into `chain`.
// `verify`: check the FlexBuffer's structure first (Prepare; Eval reads the same
// bytes again).
bool ParseOptions(const TfLiteNode* node, bool verify, Chain* chain_out) {
  const uint8_t* buffer = static_cast<const uint8_t*>(node->custom_initial_data);
  const int size = node->custom_initial_data_size;
  if (buffer == nullptr || size < 3) return Fail("no custom options");
  if (verify) {
    flexbuffers::Verifier verifier(buffer, static_cast<size_t>(size), nullptr,
                                   /*_check_alignment=*/false);
    if (!verifier.VerifyBuffer()) return Fail("the custom options are not a FlexBuffer");
  }
  const flexbuffers::Reference root = flexbuffers::GetRoot(buffer, static_cast<size_t>(size));
  if (!root.IsMap()) return Fail("the custom options are not a FlexBuffers map");
  const flexbuffers::Map map = root.AsMap();
  const flexbuffers::Reference version = map["version"];
  if (!version.IsIntOrUint() || version.AsInt64() != kFormatVersion) {
    return Fail("the options' \"version\" is not 2");
  }
  const flexbuffers::Reference chain = map["chain"];
  if (!chain.IsBlob()) return Fail("the options have no \"chain\" blob");
  const flexbuffers::Blob blob = chain.AsBlob();
  const uint8_t* words = blob.data();
  const size_t bytes = blob.size();
  if (bytes < 4 * kHeaderWords) return Fail("the chain blob is shorter than its header");
  if (Header(words, kHVersion) != kFormatVersion) return Fail("the chain's format is not 2");
  if (Header(words, kHStageWords) != kStageWords) return Fail("stage records are not 48 words");
  const int32_t stages = Header(words, kHStages);
  if (stages < 1 || stages > kMaxStages) return Fail("the chain has 0 or more than 64 stages");
  if (bytes != 4 * static_cast<size_t>(kHeaderWords + kStageWords * stages)) {
    return Fail("the chain blob's size is not that of its header and records");
  }
  const int32_t scratch_bytes = Header(words, kHScratchBytes);
  if (scratch_bytes < 0) return Fail("negative scratch bytes");
  chain_out->blob = words;
  chain_out->stages = stages;
  chain_out->scratch_bytes = scratch_bytes;
  return true;
}

int64_t ElementCount(const TfLiteTensor& tensor) {
  if (tensor.dims == nullptr) return -1;
  int64_t count = 1;
  for (int i = 0; i < tensor.dims->size; ++i) count *= tensor.dims->data[i];
  return count;
}

// A tensor of `type` and shape [1, h, w, c]?
bool IsImage(const TfLiteTensor* tensor, TfLiteType type, int32_t h, int32_t w, int32_t c) {
  return tensor != nullptr && tensor->type == type && tensor->dims != nullptr &&
         tensor->dims->size == 4 && tensor->dims->data[0] == 1 && tensor->dims->data[1] == h &&
         tensor->dims->data[2] == w && tensor->dims->data[3] == c;
}

// An int8 tensor of shape [1, c] (MEAN's output without keep_dims)?
bool IsVector(const TfLiteTensor* tensor, int32_t c) {
  return tensor != nullptr && tensor->type == kTfLiteInt8 && tensor->dims != nullptr &&
         tensor->dims->size == 2 && tensor->dims->data[0] == 1 && tensor->dims->data[1] == c;
}

// The operator's tensor of rows h, w and channels c as a stage record with `columns`
// sees it: [1, h, w, c], or along columns (w = 1) [1, 1, h, c] (the same bytes).
bool IsStageImage(const TfLiteTensor* tensor, TfLiteType type, int32_t h, int32_t w, int32_t c,
                  int32_t columns) {
  if (columns == 0) return IsImage(tensor, type, h, w, c);
  return w == 1 && IsImage(tensor, type, 1, h, c);
}

// Multipliers >= 0 then shifts in [-31, max_shift]: MultiplyByQuantizedMultiplier's
// range (max_shift 30 on int32 sums, 7 on int64 ones).
bool QuantValid(const TfLiteTensor& tensor, int32_t channels, int32_t max_shift) {
  const int32_t* q = tensor.data.i32;
  if (q == nullptr) return false;
  for (int32_t c = 0; c < channels; ++c) {
    if (q[c] < 0 || q[channels + c] < -31 || q[channels + c] > max_shift) return false;
  }
  return true;
}

const char* TypeName(TfLiteType type) {
  switch (type) {
    case kTfLiteInt8:
      return "int8";
    case kTfLiteInt16:
      return "int16";
    case kTfLiteInt32:
      return "int32";
    case kTfLiteInt64:
      return "int64";
    default:
      return "?";
  }
}

// The operator's input `index` is a tensor of `type` with `count` elements (and,
// for a quant tensor, multipliers >= 0 and shifts in [-31, max_shift]).
bool CheckConstant(MicroContext* micro_context, TfLiteNode* node, int32_t stage, int32_t index,
                   TfLiteType type, int64_t count, bool quant, const char* what,
                   int32_t max_shift = 30) {
  if (index < 1 || index >= NumInputs(node)) {
    MicroPrintf("ARENAPLAN_CASCADE: stage %d: the %s's input index %d is out of range",
                static_cast<int>(stage), what, static_cast<int>(index));
    return false;
  }
  TfLiteTensor* tensor = micro_context->AllocateTempInputTensor(node, index);
  bool ok = tensor != nullptr && tensor->type == type && ElementCount(*tensor) == count;
  if (ok && quant) ok = QuantValid(*tensor, static_cast<int32_t>(count / 2), max_shift);
  if (tensor != nullptr) micro_context->DeallocateTempTfLiteTensor(tensor);
  if (!ok && quant) {
    MicroPrintf("ARENAPLAN_CASCADE: stage %d: input %d (the %s) is not %s with %d elements "
                "(multipliers >= 0, shifts in [-31, %d])",
                static_cast<int>(stage), static_cast<int>(index), what, TypeName(type),
                static_cast<int>(count), static_cast<int>(max_shift));
  } else if (!ok) {
    MicroPrintf("ARENAPLAN_CASCADE: stage %d: input %d (the %s) is not %s with %d elements",
                static_cast<int>(stage), static_cast<int>(index), what, TypeName(type),
                static_cast<int>(count));
  }
  return ok;
}

// The type of a convolution's bias: int8 stages int32; int16 ones the type TFLM's
// int16x8 kernel reads: DEPTHWISE_CONV_2D int64, CONV_2D int32 when it sums in int32
// (acc32) else int64.
TfLiteType BiasType(const Stage& st) {
  if (st[kElementType] != kInt16) return kTfLiteInt32;
  return st[kKind] == kConv && st[kAcc32] == 1 ? kTfLiteInt32 : kTfLiteInt64;
}

// The largest shift of a convolution's quant: 7 where MultiplyByQuantizedMultiplier
// takes TFLM's int64 sums (int16 stages but an int32-summing CONV_2D), else 30.
int32_t MaxShift(const Stage& st) {
  return st[kElementType] == kInt16 && BiasType(st) == kTfLiteInt64 ? 7 : 30;
}

// Filter, bias (optional) and quant of a convolution.
bool CheckWeights(MicroContext* micro_context, TfLiteNode* node, int32_t s, const Stage& st,
                  int64_t filter_elements) {
  if (!CheckConstant(micro_context, node, s, st[kFilter], kTfLiteInt8, filter_elements, false,
                     "filter")) {
    return false;
  }
  if (st[kBias] != -1 &&
      !CheckConstant(micro_context, node, s, st[kBias], BiasType(st), st[kOutC], false, "bias")) {
    return false;
  }
  return CheckConstant(micro_context, node, s, st[kQuant], kTfLiteInt32, 2 * int64_t{st[kOutC]},
                       true, "quant", MaxShift(st));
}

// An element-wise stage: output shape = input shape.
bool SameShape(const Stage& st) {
  return st[kOutH] == st[kInH] && st[kOutW] == st[kInW] && st[kOutC] == st[kInC];
}

// MultiplyByQuantizedMultiplier's range: multiplier >= 0, shift in [-31, 30].
bool Scaling(int32_t multiplier, int32_t shift) {
  return multiplier >= 0 && shift >= -31 && shift <= 30;
}

// MultiplyByQuantizedMultiplierSmallerThanOneExp's: multiplier >= 0, shift in [-31, 0].
bool SmallerThanOne(int32_t multiplier, int32_t shift) {
  return multiplier >= 0 && shift >= -31 && shift <= 0;
}

// A constant operand's row lies as an output row (channel stride 1, column stride
// out_c, where those are above 1): read in place; otherwise spread into the scratch
// row at acc_offset, a row at a time.
bool ConstRowInPlace(const Stage& st) {
  return (st[kOutC] == 1 || st[kConstStrideC] == 1) &&
         (st[kOutW] == 1 || st[kConstStrideW] == st[kOutC]);
}

bool SpreadsConst(const Stage& st) { return st[kConstInput] >= 0 && !ConstRowInPlace(st); }

// Quantised per tensor: one scale (TFLM fills params from it).
bool PerTensor(const TfLiteTensor& tensor) {
  if (tensor.quantization.type != kTfLiteAffineQuantization) return false;
  const auto* q = static_cast<const TfLiteAffineQuantization*>(tensor.quantization.params);
  return q != nullptr && q->scale != nullptr && q->scale->size == 1;
}

// The constant operand's words (docs/cascade.md, words 40-44): none, or a constant
// of a two-operand kind, src1 -1, strides >= 0 whose last element
// (out_h-1)*stride_h + (out_w-1)*stride_w + (out_c-1)*stride_c lies inside the int8
// tensor; for ADD, SUB, MUL quantised per tensor, its zero point minus the offset
// word of its side (MINIMUM and MAXIMUM compare raw values).
bool CheckConstOperand(MicroContext* micro_context, TfLiteNode* node, int32_t s,
                       const Stage& st) {
  const int32_t index = st[kConstInput];
  if (index == -1) {
    if (st[kConstStrideH] != 0 || st[kConstStrideW] != 0 || st[kConstStrideC] != 0 ||
        st[kConstFirst] != 0) {
      return FailStage(s, "const_stride_h/w/c or const_first set without a constant operand");
    }
    return true;
  }
  if (!TwoInputs(st[kKind]) || st[kKind] == kConcat) {
    return FailStage(s, "a constant operand for a kind of one operand or CONCATENATION");
  }
  if (st[kSrc1] != -1) return FailStage(s, "src1 is not -1 beside a constant operand");
  if (st[kConstFirst] != 0 && st[kConstFirst] != 1) return FailStage(s, "const_first is not 0 or 1");
  if (st[kConstStrideH] < 0 || st[kConstStrideW] < 0 || st[kConstStrideC] < 0) {
    return FailStage(s, "a constant's stride is negative");
  }
  if (index < 1 || index >= NumInputs(node)) {
    return FailStage(s, "the constant's input index is out of range");
  }
  const int64_t last = int64_t{st[kOutH] - 1} * st[kConstStrideH] +
                       int64_t{st[kOutW] - 1} * st[kConstStrideW] +
                       int64_t{st[kOutC] - 1} * st[kConstStrideC];
  const bool scaled = st[kKind] == kAdd || st[kKind] == kSub || st[kKind] == kMul;
  const int32_t offset = st[kConstFirst] == 1 ? st[kInputOffset] : st[kInput2Offset];
  TfLiteTensor* tensor = micro_context->AllocateTempInputTensor(node, index);
  // a constant: data in the model (an activation input is the chain's, never read so)
  bool ok = tensor != nullptr && tensor->allocation_type == kTfLiteMmapRo &&
            tensor->type == kTfLiteInt8 && ElementCount(*tensor) > last;
  if (ok && scaled) ok = PerTensor(*tensor) && tensor->params.zero_point == -offset;
  if (tensor != nullptr) micro_context->DeallocateTempTfLiteTensor(tensor);
  if (!ok) {
    MicroPrintf("ARENAPLAN_CASCADE: stage %d: input %d (the constant) is not constant int8 "
                "with more than %d elements%s",
                static_cast<int>(s), static_cast<int>(index), static_cast<int>(last),
                scaled ? ", quantised per tensor, zero point minus its offset word" : "");
  }
  return ok;
}

// The operator's input k (k > 0; input 0 is checked once for the chain, `input`) is a
// tensor of stage record st's element type and shape [1, in_h, in_w, channels].
bool InputIsImage(MicroContext* micro_context, TfLiteNode* node, const TfLiteTensor* input,
                  int32_t k, const Stage& st, int32_t channels) {
  const TfLiteType type = TensorType(st[kElementType]);
  if (k == 0) return IsStageImage(input, type, st[kInH], st[kInW], channels, st[kColumns]);
  if (k >= NumInputs(node)) return false;
  TfLiteTensor* tensor = micro_context->AllocateTempInputTensor(node, k);
  const bool ok = IsStageImage(tensor, type, st[kInH], st[kInW], channels, st[kColumns]);
  if (tensor != nullptr) micro_context->DeallocateTempTfLiteTensor(tensor);
  return ok;
}

// The source `src` of stage `s` is an operator input or an earlier stage, of the
// shape the record says it reads ([in_h, in_w, channels]).
bool CheckSource(MicroContext* micro_context, TfLiteNode* node, const Chain& chain,
                 const TfLiteTensor* input, int32_t s, const Stage& st, int32_t src,
                 int32_t channels) {
  if (src >= s) return FailStage(s, "a source is not an input or an earlier stage");
  if (src < 0) {
    if (!InputIsImage(micro_context, node, input, -1 - src, st, channels)) {
      return FailStage(s, "a source input is not [1, in_h, in_w, c] of its element type");
    }
    return true;
  }
  if (Word(chain.blob, src, kOutH) != st[kInH] || Word(chain.blob, src, kOutW) != st[kInW] ||
      Word(chain.blob, src, kOutC) != channels) {
    return FailStage(s, "in_h, in_w, in_c are not its source stage's out_h, out_w, out_c");
  }
  if (Word(chain.blob, src, kElementType) != st[kElementType]) {
    return FailStage(s, "its source stage's element type is not its own");
  }
  return true;
}

// Convolution and pool geometry: positive window, strides and dilations.
bool CheckGeometry(int32_t s, const Stage& st) {
  if (st[kFilterH] < 1 || st[kFilterW] < 1 || st[kStrideH] < 1 || st[kStrideW] < 1 ||
      st[kDilationH] < 1 || st[kDilationW] < 1 || st[kPadTop] < 0 || st[kPadLeft] < 0) {
    return FailStage(s, "filter, strides and dilations must be >= 1, padding >= 0");
  }
  return true;
}

// Every pool window holds at least one position inside the input (the reference
// average pool stops at an empty one).
bool CheckPoolWindows(int32_t s, const Stage& st) {
  if (st[kDilationH] != 1 || st[kDilationW] != 1) return FailStage(s, "a pool has dilation 1");
  const bool rows_ok = st[kPadTop] < st[kFilterH] &&
                       (st[kOutH] - 1) * st[kStrideH] - st[kPadTop] < st[kInH];
  const bool cols_ok = st[kPadLeft] < st[kFilterW] &&
                       (st[kOutW] - 1) * st[kStrideW] - st[kPadLeft] < st[kInW];
  if (!rows_ok || !cols_ok) return FailStage(s, "a pool window lies wholly in the padding");
  return true;
}

// ADD's and SUB's left shift at most: int8 30 (add_common.cc takes 20); int16 15
// (its own 15: 65535 << 15 fits an int32).
int32_t MaxLeftShift(const Stage& st) { return st[kElementType] == kInt16 ? 15 : 30; }

// int16 stages: zero points 0 (TFLM's int16 kernels ignore or refuse others); an
// average pool sums at most 65536 positions (no int32 sum overflows, so TFLM's
// reference sum and CMSIS-NN's saturating one agree); acc32 only for CONV_2D; no
// constant operand, MINIMUM, MAXIMUM or MEAN (their rows are int8 here).
bool CheckInt16(int32_t s, const Stage& st) {
  if (st[kInputOffset] != 0 || st[kOutputOffset] != 0 || st[kInput2Offset] != 0) {
    return FailStage(s, "an int16 stage has an offset other than 0");
  }
  const int32_t kind = st[kKind];
  if (st[kConstInput] != -1 || kind == kMinimum || kind == kMaximum || kind == kMean) {
    return FailStage(s, "an int16 constant operand, MINIMUM, MAXIMUM or MEAN (int8 only)");
  }
  const int64_t positions = st[kKind] == kMeanRows ? int64_t{st[kInH]} * st[kInW]
                            : st[kKind] == kAvgPool ? int64_t{st[kFilterH]} * st[kFilterW]
                                                    : 0;
  if (positions > 65536) return FailStage(s, "an int16 average of more than 65536 positions");
  if (st[kAcc32] != 0 && (st[kKind] != kConv || st[kAcc32] != 1)) {
    return FailStage(s, "acc32 is not 0, or 1 for a CONV_2D");
  }
  return true;
}

// The element type is known; acc32 is 0 but for int16 CONV_2D; int16 words in range.
bool CheckElementType(int32_t s, const Stage& st) {
  if (st[kElementType] == kInt16) return CheckInt16(s, st);
  if (st[kElementType] != kInt8) return FailStage(s, "an element type other than 0 and 1");
  if (st[kAcc32] != 0) return FailStage(s, "acc32 is not 0 for an int8 stage");
  return true;
}

// What each kind needs of its record and constants.
bool CheckKind(MicroContext* micro_context, TfLiteNode* node, int32_t s, const Stage& st) {
  const int64_t window = int64_t{st[kFilterH]} * st[kFilterW];
  switch (st[kKind]) {
    case kConv:
      return CheckGeometry(s, st) &&
             CheckWeights(micro_context, node, s, st, window * st[kOutC] * st[kInC]);
    case kDepthwise:
      if (st[kDepthMultiplier] < 1 || st[kOutC] != st[kInC] * st[kDepthMultiplier]) {
        return FailStage(s, "out_c is not in_c * depth_multiplier");
      }
      return CheckGeometry(s, st) && CheckWeights(micro_context, node, s, st, window * st[kOutC]);
    case kAvgPool:
    case kMaxPool:
      if (st[kOutC] != st[kInC]) return FailStage(s, "a pool's out_c is not its in_c");
      return CheckGeometry(s, st) && CheckPoolWindows(s, st);
    case kAdd:
      if (st[kOutH] != st[kInH] || st[kOutW] != st[kInW] || st[kOutC] != st[kInC]) {
        return FailStage(s, "ADD's output shape is not its inputs'");
      }
      if (st[kLeftShift] < 0 || st[kLeftShift] > MaxLeftShift(st) ||
          !InType(-st[kInput2Offset], st[kElementType])) {
        return FailStage(s, "ADD's left_shift or input2_offset is out of range");
      }
      return true;
    case kSub:
      if (!SameShape(st)) return FailStage(s, "SUB's output shape is not its inputs'");
      if (st[kLeftShift] < 0 || st[kLeftShift] > MaxLeftShift(st) ||
          !InType(-st[kInput2Offset], st[kElementType]) ||
          !SmallerThanOne(st[kInput1Multiplier], st[kInput1Shift]) ||
          !SmallerThanOne(st[kInput2Multiplier], st[kInput2Shift]) ||
          !SmallerThanOne(st[kOutputMultiplier], st[kOutputShift])) {
        return FailStage(s, "SUB's left_shift, input2_offset, multipliers or shifts are "
                            "out of range");
      }
      return true;
    case kMul:
      if (!SameShape(st)) return FailStage(s, "MUL's output shape is not its inputs'");
      if (!InType(-st[kInput2Offset], st[kElementType]) ||
          !Scaling(st[kOutputMultiplier], st[kOutputShift])) {
        return FailStage(s, "MUL's input2_offset, multiplier or shift is out of range");
      }
      return true;
    case kQuantize:
      if (!SameShape(st)) return FailStage(s, "QUANTIZE's output shape is not its input's");
      if (!Scaling(st[kOutputMultiplier], st[kOutputShift])) {
        return FailStage(s, "QUANTIZE's multiplier or shift is out of range");
      }
      return true;
    case kRelu:
      if (!SameShape(st)) return FailStage(s, "RELU's output shape is not its input's");
      if (!Scaling(st[kOutputMultiplier], st[kOutputShift])) {
        return FailStage(s, "RELU's multiplier or shift is out of range");
      }
      return true;
    case kRelu6:
      if (!SameShape(st)) return FailStage(s, "RELU6's output shape is not its input's");
      return true;
    case kLeakyRelu:
      if (!SameShape(st)) return FailStage(s, "LEAKY_RELU's output shape is not its input's");
      if (!Scaling(st[kOutputMultiplier], st[kOutputShift]) ||
          st[kInput2Multiplier] == INT32_MIN || st[kInput2Shift] < -31 ||
          st[kInput2Shift] > 30) {
        return FailStage(s, "LEAKY_RELU's multipliers or shifts are out of range");
      }
      return true;
    case kPad:
      if (st[kOutC] != st[kInC] || st[kPadTop] < 0 || st[kPadLeft] < 0 ||
          st[kOutH] < st[kInH] + st[kPadTop] || st[kOutW] < st[kInW] + st[kPadLeft] ||
          !InType(st[kPadValue], st[kElementType])) {
        return FailStage(s, "PAD's shapes, padding or pad value do not fit");
      }
      return true;
    case kMeanRows:
      if (st[kOutH] != 1 || st[kOutW] != 1 || st[kOutC] != st[kInC]) {
        return FailStage(s, "MEAN_ROWS's output is not [1, 1, 1, in_c]");
      }
      return true;
    case kMinimum:
    case kMaximum:
      if (!SameShape(st)) return FailStage(s, "MINIMUM's or MAXIMUM's output shape is not its inputs'");
      return true;
    case kMean:
      if (st[kOutH] != 1 || st[kOutW] != 1 || st[kOutC] != st[kInC] ||
          !Scaling(st[kOutputMultiplier], st[kOutputShift])) {
        return FailStage(s, "MEAN's output is not [1, 1, in_c] or its multiplier or shift is "
                            "out of range");
      }
      return true;
    case kTransposeConv:
      if (st[kElementType] != kInt16 || st[kDilationH] != 1 || st[kDilationW] != 1) {
        return FailStage(s, "TRANSPOSE_CONV runs int16 only, without dilation");
      }
      return CheckGeometry(s, st) &&
             CheckWeights(micro_context, node, s, st, window * st[kOutC] * st[kInC]);
    case kConcat:
      if (st[kOutH] != st[kInH] || st[kOutW] != st[kInW] || st[kOutC] <= st[kInC]) {
        return FailStage(s, "CONCATENATION's output is not its inputs' rows, more channels");
      }
      return true;
    default:
      return FailStage(s, "unknown kind");
  }
}

// [offset, offset + bytes) lies inside the scratch buffer, offset a multiple of 4.
bool InScratch(const Chain& chain, int64_t offset, int64_t bytes) {
  return offset >= 0 && offset % 4 == 0 && offset + bytes <= chain.scratch_bytes;
}

// The ring (none for the last stage) and the MEAN_ROWS sums.
bool CheckBuffers(const Chain& chain, int32_t s, const Stage& st) {
  const bool last = s == chain.stages - 1;
  if (last && st[kRingRows] != 0) return FailStage(s, "the last stage has ring_rows != 0");
  if (!last) {
    const int64_t ring_bytes =
        int64_t{st[kRingRows]} * st[kOutW] * st[kOutC] * ElementBytes(st[kElementType]);
    if (st[kRingRows] < 1) return FailStage(s, "a stage before the last has ring_rows < 1");
    if (!InScratch(chain, st[kRingOffset], ring_bytes)) {
      return FailStage(s, "the ring is not inside the scratch buffer (or not 4-aligned)");
    }
  }
  if (WholeInput(st[kKind])) {
    if (!InScratch(chain, st[kAccOffset], 4 * int64_t{st[kOutC]})) {
      return FailStage(s, "the MEAN_ROWS or MEAN sums are not inside the scratch buffer");
    }
  } else if (SpreadsConst(st)) {
    if (!InScratch(chain, st[kAccOffset], int64_t{st[kOutW]} * st[kOutC])) {
      return FailStage(s, "the constant's row is not inside the scratch buffer");
    }
  } else if (st[kAccOffset] != -1) {
    return FailStage(s, "acc_offset is not -1");
  }
  return true;
}

// Word 38: 0 for every kind; 1 for an int8 CONV_2D; 2 for an int8 CONV_2D that is
// pointwise (1x1 filter, strides and dilations 1, no padding), whose bias is the
// folded one.
bool CheckConvPath(int32_t s, const Stage& st) {
  const int32_t path = st[kConvPath];
  if (path == kPathWrapper) return true;
  if (st[kKind] != kConv || st[kElementType] != kInt8 ||
      (path != kPathIm2col && path != kPathPointwise)) {
    return FailStage(s, "conv_path is not 0, or 1 or 2 for an int8 CONV_2D");
  }
  const bool pointwise = st[kFilterH] == 1 && st[kFilterW] == 1 && st[kStrideH] == 1 &&
                         st[kStrideW] == 1 && st[kDilationH] == 1 && st[kDilationW] == 1 &&
                         st[kPadTop] == 0 && st[kPadLeft] == 0 && st[kOutH] == st[kInH] &&
                         st[kOutW] == st[kInW];
  if (path == kPathPointwise && (!pointwise || st[kBias] < 0)) {
    return FailStage(s, "conv_path 2 needs a pointwise CONV_2D with its folded bias");
  }
  return true;
}

bool CheckStage(MicroContext* micro_context, TfLiteNode* node, const Chain& chain,
                const TfLiteTensor* input, int32_t s) {
  Stage st;
  Decode(chain.blob, s, &st);
  if (st[kInH] < 1 || st[kInW] < 1 || st[kInC] < 1 || st[kOutH] < 1 || st[kOutW] < 1 ||
      st[kOutC] < 1) {
    return FailStage(s, "a dimension is < 1");
  }
  if (st[kReserved2] != 0) {
    return FailStage(s, "reserved words are not 0");
  }
  if ((st[kColumns] != 0 && st[kColumns] != 1) || st[kColumns] != Word(chain.blob, 0, kColumns)) {
    return FailStage(s, "columns is not 0 or 1, or not stage 0's");
  }
  if (!CheckElementType(s, st)) return false;
  if (st[kBlockRows] < 0 || st[kBlockRows] > st[kOutH] ||
      (WholeInput(st[kKind]) && st[kBlockRows] > 1)) {
    return FailStage(s, "block_rows is not in 0..out_h (MEAN_ROWS, MEAN: 0 or 1)");
  }
  if (s < chain.stages - 1 && st[kBlockRows] > 1 && st[kRingRows] % st[kBlockRows] != 0) {
    return FailStage(s, "ring_rows is not a multiple of block_rows");
  }
  const int32_t type = st[kElementType];
  if (st[kActMin] > st[kActMax] || !InType(st[kActMin], type) || !InType(st[kActMax], type) ||
      !InType(-st[kInputOffset], type) || !InType(st[kOutputOffset], type)) {
    return FailStage(s, "the clamp or the offsets are outside the element type's range");
  }
  if (!CheckSource(micro_context, node, chain, input, s, st, st[kSrc0], st[kInC])) return false;
  if (!CheckConstOperand(micro_context, node, s, st)) return false;
  if (TwoInputs(st[kKind]) && st[kConstInput] == -1) {
    // CONCATENATION's second source has the channels the first leaves
    const int32_t channels = st[kKind] == kConcat ? st[kOutC] - st[kInC] : st[kInC];
    if (!CheckSource(micro_context, node, chain, input, s, st, st[kSrc1], channels)) {
      return false;
    }
  } else if (st[kSrc1] != -1) {
    return FailStage(s, "src1 is not -1 for a kind of one operand");
  }
  return CheckConvPath(s, st) && CheckKind(micro_context, node, s, st) &&
         CheckBuffers(chain, s, st);
}

bool CheckChain(MicroContext* micro_context, TfLiteNode* node, const Chain& chain) {
  if (NumInputs(node) < 1 || NumOutputs(node) != 1) {
    return Fail("the operator needs inputs and exactly one output");
  }
  TfLiteTensor* input = micro_context->AllocateTempInputTensor(node, 0);
  bool ok = true;
  for (int32_t s = 0; ok && s < chain.stages; ++s) {
    ok = CheckStage(micro_context, node, chain, input, s);
  }
  if (input != nullptr) micro_context->DeallocateTempTfLiteTensor(input);
  if (!ok) return false;
  const int32_t last = chain.stages - 1;
  TfLiteTensor* output = micro_context->AllocateTempOutputTensor(node, 0);
  const int32_t out_h = Word(chain.blob, last, kOutH), out_w = Word(chain.blob, last, kOutW);
  const int32_t out_c = Word(chain.blob, last, kOutC);
  ok = IsStageImage(output, TensorType(Word(chain.blob, last, kElementType)), out_h, out_w, out_c,
                    Word(chain.blob, last, kColumns)) ||
       (out_h == 1 && out_w == 1 && IsVector(output, out_c));
  if (output != nullptr) micro_context->DeallocateTempTfLiteTensor(output);
  if (!ok) {
    return Fail("the output tensor is not [1, out_h, out_w, out_c] of the last stage's type "
                "(or int8 [1, out_c] of one pixel)");
  }
  return true;
}

// ---------------------------------------------------------------------------
// Row geometry, shared by Prepare (CMSIS-NN builds) and Eval.

// a / b rounded up, for b > 0 and any a.
inline int32_t CeilDiv(int32_t a, int32_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

// needs(s, y) for src0 (not MEAN_ROWS): the first and last row, false when none.
// Convolutions and pools: y*stride_h - pad_top + k*dilation_h, k in [0, filter_h),
// those inside [0, in_h); element-wise kinds: y; PAD: y - pad_top if inside;
// TRANSPOSE_CONV: the rows r with 0 <= y + pad_top - r*stride_h < filter_h inside.
bool NeededRows(const uint8_t* blob, int32_t s, int32_t y, int32_t* lo, int32_t* hi) {
  const int32_t kind = Word(blob, s, kKind);
  const int32_t in_h = Word(blob, s, kInH);
  if (Elementwise(kind)) {
    *lo = *hi = y;
    return true;
  }
  if (kind == kPad) {
    const int32_t r = y - Word(blob, s, kPadTop);
    *lo = *hi = r;
    return r >= 0 && r < in_h;
  }
  if (kind == kTransposeConv) {  // input rows r with 0 <= y + pad_top - r*stride_h < filter_h
    const int32_t top = y + Word(blob, s, kPadTop);
    const int32_t stride = Word(blob, s, kStrideH);
    *lo = CeilDiv(top - Word(blob, s, kFilterH) + 1, stride);
    if (*lo < 0) *lo = 0;
    *hi = top / stride;
    if (*hi > in_h - 1) *hi = in_h - 1;
    return *lo <= *hi;
  }
  const int32_t first = y * Word(blob, s, kStrideH) - Word(blob, s, kPadTop);
  const int32_t step = Word(blob, s, kDilationH);
  if (first > in_h - 1) return false;
  const int32_t k_lo = first >= 0 ? 0 : (-first + step - 1) / step;
  int32_t k_hi = (in_h - 1 - first) / step;
  if (k_hi > Word(blob, s, kFilterH) - 1) k_hi = Word(blob, s, kFilterH) - 1;
  if (k_lo > k_hi) return false;
  *lo = first + k_lo * step;
  *hi = first + k_hi * step;
  return true;
}

// Rows a step of stage s computes: block_rows, 0 meaning 1.
int32_t BlockRows(const uint8_t* blob, int32_t s) {
  const int32_t block = Word(blob, s, kBlockRows);
  return block > 1 ? block : 1;
}

// The rows of src0 output rows y .. y+n-1 read together: from the least of their
// first rows to the greatest of their last (not the first row's first: with a
// dilation the next row's first may come before it); false when none.
bool NeededBlock(const uint8_t* blob, int32_t s, int32_t y, int32_t n, int32_t* lo,
                 int32_t* hi) {
  bool any = false;
  for (int32_t k = 0; k < n; ++k) {
    int32_t row_lo = 0, row_hi = -1;
    if (!NeededRows(blob, s, y + k, &row_lo, &row_hi)) continue;
    if (!any || row_lo < *lo) *lo = row_lo;
    if (!any || row_hi > *hi) *hi = row_hi;
    any = true;
  }
  return any;
}

#if defined(CMSIS_NN)
// ---------------------------------------------------------------------------
// CMSIS-NN builds: CONV_2D and DEPTHWISE_CONV_2D rows by the CMSIS-NN functions
// TFLM's cmsis_nn kernels call for the operators the chain replaced: int8 the s8
// wrappers, int16 arm_convolve_wrapper_s16 (its int64 or int32 bias as TFLM's
// kernel passes it: int32 when the bias is int32 or absent) and
// arm_depthwise_conv_s16 (no buffer, as TFLM calls it).
//
// A step of a convolution, output rows y .. y+n-1 (n: block_rows, fewer at the
// end), reads rows lo..hi of its source (NeededBlock). They are described to
// CMSIS-NN as an input of hi-lo+1 rows whose padding above is the rows of the
// window before lo, and an output of n rows: the rows outside the window are then
// CMSIS-NN's padding, as the rows outside the tensor are in the whole operator, and
// each output element is the same integer sum, requantized by the same function.
// The n output rows are contiguous (the output tensor, or ring slots: ring_rows is
// a multiple of block_rows and steps start at multiples of it). A window that
// wraps around its source's ring is copied to the start of the work buffer first;
// CMSIS-NN's own buffer follows it (16-aligned).
// The work buffer is a second scratch request, of
//   window + buffer (window rounded up to 16 when buffer > 0), where
//   window: over convolutions reading a ring of fewer rows than their in_h: the
//           largest min((block_rows-1)*stride_h + (filter_h-1)*dilation_h + 1, in_h)
//           * in_w * in_c elements, in bytes, where that is above 1 row,
//   buffer: the largest *_wrapper_s8_get_buffer_size over every int8 step's window,
//           arm_convolve_wrapper_s16_get_buffer_size for int16 CONV_2D (the window
//           does not change it), none for int16 DEPTHWISE_CONV_2D.
// An int8 step that reads no source row (wholly in the padding) takes the reference
// path; an int16 one is given CMSIS-NN as a window of no rows (all padding).
// CMSIS-NN's int16 CONV_2D with an int64 bias (plain C and DSP) sums the first 512
// columns of a filter in int32 for a pair of pixels and all of them for a lone one:
// above 512 columns, steps of an odd number of pixels are refused in Prepare (the
// whole operator pairs pixels from its first; a step must start a pair).

struct ConvWindow {
  int32_t lo;        // first source row read
  int32_t rows;      // hi - lo + 1
  int32_t pad_top;   // rows of padding before lo: lo - (y * stride_h - pad_top)
  int32_t out_rows;  // n
};

// The window of the step of rows y .. y+n-1 of stage s that reads source rows lo..hi.
ConvWindow WindowOfRows(const uint8_t* blob, int32_t s, int32_t y, int32_t n, int32_t lo,
                        int32_t hi) {
  ConvWindow window;
  window.lo = lo;
  window.rows = hi - lo + 1;
  window.pad_top = lo - (y * Word(blob, s, kStrideH) - Word(blob, s, kPadTop));
  window.out_rows = n;
  return window;
}

bool WindowOf(const uint8_t* blob, int32_t s, int32_t y, int32_t n, ConvWindow* window) {
  int32_t lo = 0, hi = -1;
  if (!NeededBlock(blob, s, y, n, &lo, &hi)) return false;
  *window = WindowOfRows(blob, s, y, n, lo, hi);
  return true;
}

// A window of no rows for the step of n rows at y (int16 steps wholly in the
// padding): CMSIS-NN reads no input and sums no tap.
ConvWindow EmptyWindow(int32_t n) { return ConvWindow{0, 0, 0, n}; }

// CMSIS-NN's description of a step of stage s (a convolution). Filter dims as
// TFLM's kernels give them.
struct CmsisCall {
  cmsis_nn_conv_params conv;
  cmsis_nn_dw_conv_params dw;
  cmsis_nn_dims input;
  cmsis_nn_dims filter;
  cmsis_nn_dims bias;
  cmsis_nn_dims output;
};

void Describe(const uint8_t* blob, int32_t s, const ConvWindow& window, CmsisCall* call) {
  const int32_t out_c = Word(blob, s, kOutC);
  call->input = {1, window.rows, Word(blob, s, kInW), Word(blob, s, kInC)};
  call->output = {1, window.out_rows, Word(blob, s, kOutW), out_c};
  call->bias = {1, 1, 1, out_c};
  const bool conv = Word(blob, s, kKind) == kConv;
  call->filter = {1, Word(blob, s, kFilterH), Word(blob, s, kFilterW),
                  conv ? Word(blob, s, kInC) : out_c};
  const cmsis_nn_tile stride = {Word(blob, s, kStrideW), Word(blob, s, kStrideH)};
  const cmsis_nn_tile padding = {Word(blob, s, kPadLeft), window.pad_top};
  const cmsis_nn_tile dilation = {Word(blob, s, kDilationW), Word(blob, s, kDilationH)};
  const cmsis_nn_activation activation = {Word(blob, s, kActMin), Word(blob, s, kActMax)};
  const int32_t input_offset = Word(blob, s, kInputOffset);
  const int32_t output_offset = Word(blob, s, kOutputOffset);
  call->conv = {input_offset, output_offset, stride, padding, dilation, activation};
  call->dw = {input_offset, output_offset, Word(blob, s, kDepthMultiplier),
              stride, padding, dilation, activation};
}

// Kinds whose steps run by CMSIS-NN on a window of rows: the convolutions and the int8
// pools (arm_avgpool_s8, arm_max_pool_s8, as TFLM's CMSIS-NN pooling.cc; an int16
// pool keeps the reference arithmetic).
inline bool Windowed(int32_t kind, int32_t element_type) {
  const bool pool = (kind == kAvgPool || kind == kMaxPool) && element_type == kInt8;
  return kind == kConv || kind == kDepthwise || pool;
}

// Rows of the largest window stage s copies (0: its windows never wrap: it reads
// the input tensor, a ring of at least in_h rows, or one row per step).
int32_t WindowCopyRows(const uint8_t* blob, int32_t s) {
  if (!Windowed(Word(blob, s, kKind), Word(blob, s, kElementType))) return 0;
  if (Word(blob, s, kConvPath) == kPathPointwise) return 0;  // split at the wrap instead
  const int32_t src = Word(blob, s, kSrc0);
  const int32_t in_h = Word(blob, s, kInH);
  if (src < 0 || Word(blob, src, kRingRows) >= in_h) return 0;
  int32_t rows = (BlockRows(blob, s) - 1) * Word(blob, s, kStrideH) +
                 (Word(blob, s, kFilterH) - 1) * Word(blob, s, kDilationH) + 1;
  if (rows > in_h) rows = in_h;
  return rows > 1 ? rows : 0;
}

int64_t WindowBytes(const uint8_t* blob, int32_t stages) {
  int64_t bytes = 0;
  for (int32_t s = 0; s < stages; ++s) {
    const int64_t b = int64_t{WindowCopyRows(blob, s)} * Word(blob, s, kInW) *
                      Word(blob, s, kInC) * ElementBytes(Word(blob, s, kElementType));
    if (b > bytes) bytes = b;
  }
  return bytes;
}

int64_t Align16(int64_t n) { return (n + 15) & ~int64_t{15}; }

// The buffer CMSIS-NN asks for an int16 convolution (none for DEPTHWISE_CONV_2D:
// TFLM gives arm_depthwise_conv_s16 none); the window's rows do not change it.
int64_t CmsisBufferBytes16(const uint8_t* blob, int32_t s) {
  if (Word(blob, s, kKind) != kConv) return 0;
  CmsisCall call;
  Describe(blob, s, EmptyWindow(1), &call);
  return arm_convolve_wrapper_s16_get_buffer_size(&call.conv, &call.input, &call.filter,
                                                  &call.output);
}

// The buffer CMSIS-NN asks for one step of a convolution run by conv_path `path`:
// the wrapper's, arm_convolve_s8's, none for the pointwise loop.
int32_t StepBufferBytes(int32_t path, int32_t kind, const CmsisCall& call) {
  if (path == kPathPointwise) return 0;
  if (path == kPathIm2col) return arm_convolve_s8_get_buffer_size(&call.input, &call.filter);
  return kind == kConv ? arm_convolve_wrapper_s8_get_buffer_size(&call.conv, &call.input,
                                                                 &call.filter, &call.output)
                       : arm_depthwise_conv_wrapper_s8_get_buffer_size(&call.dw, &call.input,
                                                                       &call.filter,
                                                                       &call.output);
}

// The largest buffer CMSIS-NN asks for any step of any convolution or average pool.
int64_t CmsisBufferBytes(const uint8_t* blob, int32_t stages) {
  int64_t bytes = 0;
  for (int32_t s = 0; s < stages; ++s) {
    const int32_t kind = Word(blob, s, kKind);
    if (kind == kAvgPool && Word(blob, s, kElementType) == kInt8) {  // the same every step
      const int64_t b = arm_avgpool_s8_get_buffer_size(Word(blob, s, kOutW), Word(blob, s, kInC));
      if (b > bytes) bytes = b;
    }
    if (kind != kConv && kind != kDepthwise) continue;
    if (Word(blob, s, kElementType) == kInt16) {
      const int64_t b = CmsisBufferBytes16(blob, s);
      if (b > bytes) bytes = b;
      continue;
    }
    const int32_t out_h = Word(blob, s, kOutH), block = BlockRows(blob, s);
    for (int32_t y = 0; y < out_h; y += block) {
      ConvWindow window;
      if (!WindowOf(blob, s, y, out_h - y < block ? out_h - y : block, &window)) continue;
      CmsisCall call;
      Describe(blob, s, window, &call);
      const int32_t b = StepBufferBytes(Word(blob, s, kConvPath), kind, call);
      if (b > bytes) bytes = b;
    }
  }
  return bytes;
}

int64_t WorkBytes(int64_t window, int64_t buffer) {
  return buffer > 0 ? Align16(window) + buffer : window;
}

// Plain C and DSP: an int16 CONV_2D with an int64 bias and more than MAX_COL_COUNT
// columns sees its pixels in pairs, as the whole operator does (see above). No int8
// convolution along columns: the s8 wrappers choose their path from the shapes, and
// the whole operator's were [1, 1, W, C].
bool CheckCmsis(int32_t s, const Stage& st) {
  const bool convolves = st[kKind] == kConv || st[kKind] == kDepthwise;
  if (convolves && st[kElementType] == kInt8 && st[kColumns] == 1) {
    return FailStage(s, "an int8 convolution along columns (CMSIS-NN chose by the shapes)");
  }
#if !defined(ARM_MATH_MVEI)
  const bool wide_bias = st[kBias] != -1 && st[kAcc32] == 0;
  const int64_t columns = int64_t{st[kInC]} * st[kFilterH] * st[kFilterW];
  const int32_t block = st[kBlockRows] > 1 ? st[kBlockRows] : 1;
  if (st[kKind] == kConv && st[kElementType] == kInt16 && wide_bias &&
      columns > MAX_COL_COUNT && block < st[kOutH] && (int64_t{block} * st[kOutW]) % 2 != 0) {
    return FailStage(s, "CMSIS-NN's int16 CONV_2D needs steps of an even number of pixels");
  }
#else
  (void)s;
  (void)st;
#endif
  return true;
}
#endif  // CMSIS_NN

void* Init(TfLiteContext* context, const char* buffer, size_t length) {
  (void)buffer;  // the options are parsed in Prepare (node->custom_initial_data)
  (void)length;
  void* raw = GetMicroContext(context)->AllocatePersistentBuffer(sizeof(OpData));
  if (raw == nullptr) return nullptr;
  OpData* data = static_cast<OpData*>(raw);
  data->scratch_index = -1;
  data->work_index = -1;
  return data;
}

// One scratch request of `bytes` (none for 0); its handle into `*handle`.
bool RequestScratch(MicroContext* micro_context, int64_t bytes, int16_t* handle) {
  *handle = -1;
  if (bytes <= 0) return true;
  if (bytes > INT32_MAX) return Fail("a scratch buffer above 2 GiB");
  int index = -1;
  if (micro_context->RequestScratchBufferInArena(static_cast<size_t>(bytes), &index) !=
      kTfLiteOk) {
    return false;
  }
  if (index < 0 || index > INT16_MAX) return Fail("a scratch handle above 32767");
  *handle = static_cast<int16_t>(index);
  return true;
}

TfLiteStatus Prepare(TfLiteContext* context, TfLiteNode* node) {
  OpData* data = static_cast<OpData*>(node->user_data);
  if (data == nullptr) {
    Fail("no persistent record (the arena is full?)");
    return kTfLiteError;
  }
  MicroContext* micro_context = GetMicroContext(context);
  Chain chain;
  if (!ParseOptions(node, /*verify=*/true, &chain) || !CheckChain(micro_context, node, chain)) {
    return kTfLiteError;
  }
  if (!RequestScratch(micro_context, chain.scratch_bytes, &data->scratch_index)) {
    return kTfLiteError;
  }
  data->work_index = -1;
#if defined(CMSIS_NN)
  for (int32_t s = 0; s < chain.stages; ++s) {
    Stage st;
    Decode(chain.blob, s, &st);
    if (!CheckCmsis(s, st)) return kTfLiteError;
  }
  const int64_t work = WorkBytes(WindowBytes(chain.blob, chain.stages),
                                 CmsisBufferBytes(chain.blob, chain.stages));
  if (!RequestScratch(micro_context, work, &data->work_index)) return kTfLiteError;
#endif
  return kTfLiteOk;
}

// ---------------------------------------------------------------------------
// Eval: the pull order of docs/cascade.md.

// The state of one Eval, on its stack.
struct Run {
  TfLiteContext* context;
  TfLiteNode* node;
  const uint8_t* blob;
  int32_t stages;
  const int8_t* input;  // the operator's input 0, whole (its bytes: int8 or int16)
  int8_t* output;       // the operator's output 0, written by the last stage (bytes)
  int8_t* scratch;      // the rings and sums; nullptr without scratch
  int8_t* window;       // CMSIS-NN builds: where wrapped windows are copied
  void* cmsis_buffer;   // CMSIS-NN builds: CMSIS-NN's buffer; nullptr when none
  bool ok;              // false once a read found its row gone from a ring
  int32_t next[kMaxStages];  // rows of each stage computed so far
};

// The rows a stage reads from one source: the whole input tensor or a ring.
struct Rows {
  const int8_t* base;  // row 0 of the tensor, or slot 0 of the ring
  int32_t ring_rows;   // slots; 0: the whole tensor
  int32_t row_bytes;   // in_w * in_c elements of the reader, in bytes

  const int8_t* Row(int32_t r) const {
    return base + (ring_rows > 0 ? r % ring_rows : r) * row_bytes;
  }
};

// Bytes of a row of stage record `st`'s source(s): in_w * in_c elements.
int32_t SourceRowBytes(const Stage& st) {
  return st[kInW] * st[kInC] * ElementBytes(st[kElementType]);
}

Rows RowsOf(const Run& run, int32_t src, int32_t row_bytes) {
  if (src == -1) return Rows{run.input, 0, row_bytes};
  if (src < 0) {  // the operator's input -1 - src, whole
    const TfLiteEvalTensor* input = micro::GetEvalInput(run.context, run.node, -1 - src);
    return Rows{micro::GetTensorData<int8_t>(input), 0, row_bytes};
  }
  return Rows{run.scratch + Word(run.blob, src, kRingOffset), Word(run.blob, src, kRingRows),
              row_bytes};
}

// Where row y of stage s goes: the output tensor (last stage) or its ring's slot.
int8_t* OutputRow(const Run& run, int32_t s, const Stage& st, int32_t y) {
  const int32_t row_bytes = st[kOutW] * st[kOutC] * ElementBytes(st[kElementType]);
  if (s == run.stages - 1) return run.output + y * row_bytes;
  return run.scratch + st[kRingOffset] + (y % st[kRingRows]) * row_bytes;
}

// Rows lo..hi of src are computed and still in its ring (next - lo <= ring_rows).
bool Readable(Run* run, int32_t s, int32_t src, int32_t lo, int32_t hi) {
  if (src < 0) return true;
  const int32_t next = run->next[src];
  const int32_t ring_rows = Word(run->blob, src, kRingRows);
  if (hi < next && next - lo <= ring_rows) return true;
  MicroPrintf("ARENAPLAN_CASCADE: stage %d reads rows %d..%d of stage %d, whose ring of %d "
              "rows holds %d..%d",
              static_cast<int>(s), static_cast<int>(lo), static_cast<int>(hi),
              static_cast<int>(src), static_cast<int>(ring_rows),
              static_cast<int>(next - ring_rows), static_cast<int>(next - 1));
  run->ok = false;
  return false;
}

// ---- Row functions (leaves of the recursion) --------------------------------

// The constants of a convolution stage.
struct Weights {
  const int8_t* filter;
  const int32_t* bias;        // nullptr: none
  const int32_t* multiplier;  // [out_c]
  const int32_t* shift;       // [out_c]
};

Weights WeightsOf(const Run& run, const Stage& st) {
  Weights w;
  w.filter = micro::GetTensorData<int8_t>(micro::GetEvalInput(run.context, run.node, st[kFilter]));
  w.bias = st[kBias] < 0 ? nullptr
                         : micro::GetTensorData<int32_t>(
                               micro::GetEvalInput(run.context, run.node, st[kBias]));
  w.multiplier =
      micro::GetTensorData<int32_t>(micro::GetEvalInput(run.context, run.node, st[kQuant]));
  w.shift = w.multiplier + st[kOutC];
  return w;
}

int8_t Clamp(int32_t value, const Stage& st) {
  if (value < st[kActMin]) value = st[kActMin];
  if (value > st[kActMax]) value = st[kActMax];
  return static_cast<int8_t>(value);
}

// The reference convolutions' epilogue: bias, rescale, output offset, clamp.
int8_t Requantize(int32_t acc, const Weights& w, int32_t channel, const Stage& st) {
  if (w.bias != nullptr) acc += w.bias[channel];
  acc = MultiplyByQuantizedMultiplier(acc, w.multiplier[channel], w.shift[channel]);
  return Clamp(acc + st[kOutputOffset], st);
}

// CONV_2D, filter [out_c, filter_h, filter_w, in_c]: reference ConvPerChannel.
void ConvRow(const Stage& st, const Rows& in, const Weights& w, int32_t y, int8_t* out) {
  const int32_t in_h = st[kInH], in_w = st[kInW], in_c = st[kInC];
  const int32_t fh = st[kFilterH], fw = st[kFilterW];
  // a folded bias (conv_path 2) already holds input_offset times the filter's sum
  const int32_t input_offset = st[kConvPath] == kPathPointwise ? 0 : st[kInputOffset];
  const int32_t in_y0 = y * st[kStrideH] - st[kPadTop];
  for (int32_t x = 0; x < st[kOutW]; ++x) {
    const int32_t in_x0 = x * st[kStrideW] - st[kPadLeft];
    for (int32_t oc = 0; oc < st[kOutC]; ++oc) {
      const int8_t* filter = w.filter + oc * fh * fw * in_c;
      int32_t acc = 0;
      for (int32_t ky = 0; ky < fh; ++ky) {
        const int32_t in_y = in_y0 + ky * st[kDilationH];
        if (in_y < 0 || in_y >= in_h) continue;  // outside the tensor: skipped
        const int8_t* row = in.Row(in_y);
        for (int32_t kx = 0; kx < fw; ++kx) {
          const int32_t in_x = in_x0 + kx * st[kDilationW];
          if (in_x < 0 || in_x >= in_w) continue;
          const int8_t* pixel = row + in_x * in_c;
          const int8_t* taps = filter + (ky * fw + kx) * in_c;
          for (int32_t ic = 0; ic < in_c; ++ic) {
            acc += static_cast<int32_t>(taps[ic]) * (pixel[ic] + input_offset);
          }
        }
      }
      *out++ = Requantize(acc, w, oc, st);
    }
  }
}

// DEPTHWISE_CONV_2D, filter [1, filter_h, filter_w, out_c], output channel
// ic * depth_multiplier + m: reference DepthwiseConvPerChannel.
void DepthwiseRow(const Stage& st, const Rows& in, const Weights& w, int32_t y, int8_t* out) {
  const int32_t in_h = st[kInH], in_w = st[kInW], in_c = st[kInC], out_c = st[kOutC];
  const int32_t fh = st[kFilterH], fw = st[kFilterW], multiplier = st[kDepthMultiplier];
  const int32_t input_offset = st[kInputOffset];
  const int32_t in_y0 = y * st[kStrideH] - st[kPadTop];
  for (int32_t x = 0; x < st[kOutW]; ++x) {
    const int32_t in_x0 = x * st[kStrideW] - st[kPadLeft];
    for (int32_t ic = 0; ic < in_c; ++ic) {
      for (int32_t m = 0; m < multiplier; ++m) {
        const int32_t oc = ic * multiplier + m;
        int32_t acc = 0;
        for (int32_t ky = 0; ky < fh; ++ky) {
          const int32_t in_y = in_y0 + ky * st[kDilationH];
          if (in_y < 0 || in_y >= in_h) continue;
          const int8_t* row = in.Row(in_y);
          for (int32_t kx = 0; kx < fw; ++kx) {
            const int32_t in_x = in_x0 + kx * st[kDilationW];
            if (in_x < 0 || in_x >= in_w) continue;
            acc += static_cast<int32_t>(w.filter[(ky * fw + kx) * out_c + oc]) *
                   (row[in_x * in_c + ic] + input_offset);
          }
        }
        *out++ = Requantize(acc, w, oc, st);
      }
    }
  }
}

// The reference average pool's division: rounded away from zero.
int32_t RoundedAverage(int32_t sum, int32_t count) {
  return sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
}

// AVERAGE_POOL_2D and MAX_POOL_2D on the raw int8 values: reference AveragePool and
// MaxPool (the window clipped to the tensor; Prepare made sure it is never empty).
void PoolRow(const Stage& st, const Rows& in, bool average, int32_t y, int8_t* out) {
  const int32_t in_c = st[kInC];
  const int32_t in_y0 = y * st[kStrideH] - st[kPadTop];
  const int32_t fy0 = in_y0 < 0 ? -in_y0 : 0;
  const int32_t fy1 = st[kFilterH] < st[kInH] - in_y0 ? st[kFilterH] : st[kInH] - in_y0;
  for (int32_t x = 0; x < st[kOutW]; ++x) {
    const int32_t in_x0 = x * st[kStrideW] - st[kPadLeft];
    const int32_t fx0 = in_x0 < 0 ? -in_x0 : 0;
    const int32_t fx1 = st[kFilterW] < st[kInW] - in_x0 ? st[kFilterW] : st[kInW] - in_x0;
    for (int32_t c = 0; c < in_c; ++c) {
      int32_t sum = 0;
      int32_t count = 0;
      int32_t max = -128;
      for (int32_t fy = fy0; fy < fy1; ++fy) {
        const int8_t* row = in.Row(in_y0 + fy);
        for (int32_t fx = fx0; fx < fx1; ++fx) {
          const int32_t value = row[(in_x0 + fx) * in_c + c];
          sum += value;
          if (value > max) max = value;
          ++count;
        }
      }
      *out++ = Clamp(average ? RoundedAverage(sum, count) : max, st);
    }
  }
}

#if defined(CMSIS_NN)
// ADD and MUL of two rows in a CMSIS-NN build: the functions TFLM's CMSIS-NN ADD and
// MUL call (arm_elementwise_add_s8, arm_elementwise_mul_s8), TFLM's reference
// arithmetic with arm_nn_requantize for MultiplyByQuantizedMultiplier*: the same
// bytes, in fewer instructions than the reference loops (TFLM's CMSIS-NN kernels
// pass the same words).
void CmsisAddRow(const Stage& st, const int8_t* a, const int8_t* b, int8_t* out) {
  arm_elementwise_add_s8(a, b, st[kInputOffset], st[kInput1Multiplier], st[kInput1Shift],
                         st[kInput2Offset], st[kInput2Multiplier], st[kInput2Shift],
                         st[kLeftShift], out, st[kOutputOffset], st[kOutputMultiplier],
                         st[kOutputShift], st[kActMin], st[kActMax], st[kOutW] * st[kOutC]);
}

void CmsisMulRow(const Stage& st, const int8_t* a, const int8_t* b, int8_t* out) {
  arm_elementwise_mul_s8(a, b, st[kInputOffset], st[kInput2Offset], out, st[kOutputOffset],
                         st[kOutputMultiplier], st[kOutputShift], st[kActMin], st[kActMax],
                         st[kOutW] * st[kOutC]);
}
#endif  // CMSIS_NN

// ADD of two rows: reference AddFunc, element by element (CMSIS-NN builds: above).
void AddRow(const Stage& st, const int8_t* a, const int8_t* b, int8_t* out) {
#if defined(CMSIS_NN)
  CmsisAddRow(st, a, b, out);
  return;
#endif
  const int32_t n = st[kOutW] * st[kOutC];
  const int32_t scale = 1 << st[kLeftShift];
  for (int32_t i = 0; i < n; ++i) {
    const int32_t a_shifted = (st[kInputOffset] + a[i]) * scale;
    const int32_t b_shifted = (st[kInput2Offset] + b[i]) * scale;
    const int32_t a_scaled = MultiplyByQuantizedMultiplierSmallerThanOneExp(
        a_shifted, st[kInput1Multiplier], st[kInput1Shift]);
    const int32_t b_scaled = MultiplyByQuantizedMultiplierSmallerThanOneExp(
        b_shifted, st[kInput2Multiplier], st[kInput2Shift]);
    const int32_t raw = MultiplyByQuantizedMultiplierSmallerThanOneExp(
                            a_scaled + b_scaled, st[kOutputMultiplier], st[kOutputShift]) +
                        st[kOutputOffset];
    out[i] = Clamp(raw, st);
  }
}

// SUB of two rows: reference SubElementwise (ADD's arithmetic, the scaled second
// input subtracted).
void SubRow(const Stage& st, const int8_t* a, const int8_t* b, int8_t* out) {
  const int32_t n = st[kOutW] * st[kOutC];
  const int32_t scale = 1 << st[kLeftShift];
  for (int32_t i = 0; i < n; ++i) {
    const int32_t a_scaled = MultiplyByQuantizedMultiplierSmallerThanOneExp(
        (st[kInputOffset] + a[i]) * scale, st[kInput1Multiplier], st[kInput1Shift]);
    const int32_t b_scaled = MultiplyByQuantizedMultiplierSmallerThanOneExp(
        (st[kInput2Offset] + b[i]) * scale, st[kInput2Multiplier], st[kInput2Shift]);
    const int32_t raw = MultiplyByQuantizedMultiplierSmallerThanOneExp(
                            a_scaled - b_scaled, st[kOutputMultiplier], st[kOutputShift]) +
                        st[kOutputOffset];
    out[i] = Clamp(raw, st);
  }
}

// MUL of two rows: reference_integer_ops::MulElementwise (CMSIS-NN builds: above).
void MulRow(const Stage& st, const int8_t* a, const int8_t* b, int8_t* out) {
#if defined(CMSIS_NN)
  CmsisMulRow(st, a, b, out);
  return;
#endif
  const int32_t n = st[kOutW] * st[kOutC];
  for (int32_t i = 0; i < n; ++i) {
    const int32_t product = (st[kInputOffset] + a[i]) * (st[kInput2Offset] + b[i]);
    const int32_t raw =
        st[kOutputOffset] +
        MultiplyByQuantizedMultiplier(product, st[kOutputMultiplier], st[kOutputShift]);
    out[i] = Clamp(raw, st);
  }
}

// RELU (ReluQuantized: requantised to the output's scale, then clamped), RELU6
// (Relu6Quantized: the raw values clamped), LEAKY_RELU (QuantizeLeakyRelu: the
// identity or the alpha branch by the sign of input - zero point) and QUANTIZE
// (Requantize: RELU's formula, clamped to the type) of a row.
void ActivationRow(const Stage& st, const int8_t* in, int8_t* out) {
  const int32_t n = st[kOutW] * st[kOutC];
  const int32_t kind = st[kKind];
  // LEAKY_RELU's alpha multiplier may be negative (alpha < 0): its magnitude is
  // applied and the sign after, as the reference does
  const bool negative_alpha = st[kInput2Multiplier] < 0;
  const int32_t alpha = negative_alpha ? -st[kInput2Multiplier] : st[kInput2Multiplier];
  for (int32_t i = 0; i < n; ++i) {
    if (kind == kRelu6) {
      out[i] = Clamp(in[i], st);
      continue;
    }
    const int32_t value = in[i] + st[kInputOffset];
    int32_t raw = st[kOutputOffset];
    if (kind == kRelu || kind == kQuantize || value >= 0) {
      raw += MultiplyByQuantizedMultiplier(value, st[kOutputMultiplier], st[kOutputShift]);
    } else {
      const int32_t scaled = MultiplyByQuantizedMultiplier(value, alpha, st[kInput2Shift]);
      raw += negative_alpha ? -scaled : scaled;
    }
    out[i] = Clamp(raw, st);
  }
}

// MINIMUM, MAXIMUM of two rows: the raw int8 values compared (reference
// MaximumMinimumBroadcastSlow's MinimumOp, MaximumOp; CMSIS-NN's arm_minimum_s8 and
// arm_maximum_s8 compare the same values).
void MinMaxRow(const Stage& st, const int8_t* a, const int8_t* b, int8_t* out) {
  const int32_t n = st[kOutW] * st[kOutC];
  if (st[kKind] == kMaximum) {
    for (int32_t i = 0; i < n; ++i) out[i] = a[i] > b[i] ? a[i] : b[i];
  } else {
    for (int32_t i = 0; i < n; ++i) out[i] = a[i] < b[i] ? a[i] : b[i];
  }
}

// ---- Constant operands (words 40-44) ---------------------------------------------
// TFLM's broadcast kernels (reference_integer_ops::BroadcastAdd6DSlow,
// BroadcastMul6DSlow, reference_ops::BroadcastQuantSubSlow,
// MaximumMinimumBroadcastSlow) compute each output element from the two operands'
// elements with the element-wise function; here the constant's elements of output
// row y, column x, channel c are const[y*stride_h + x*stride_w + c*stride_c], laid
// out as a row and handed, in the operator's order, to the same row functions.

// Row y of the constant operand: in place, or spread into the scratch row.
const int8_t* ConstRow(const Run& run, const Stage& st, int32_t y) {
  const int8_t* c =
      micro::GetTensorData<int8_t>(micro::GetEvalInput(run.context, run.node, st[kConstInput])) +
      y * st[kConstStrideH];
  if (ConstRowInPlace(st)) return c;
  int8_t* row = run.scratch + st[kAccOffset];
  const int32_t out_c = st[kOutC], stride_w = st[kConstStrideW], stride_c = st[kConstStrideC];
  for (int32_t x = 0; x < st[kOutW]; ++x) {
    int8_t* pixel = row + x * out_c;
    const int8_t* from = c + x * stride_w;
    if (stride_c == 0) {
      std::memset(pixel, *from, static_cast<size_t>(out_c));
    } else {
      for (int32_t ch = 0; ch < out_c; ++ch) pixel[ch] = from[ch * stride_c];
    }
  }
  return row;
}

// The two-operand row function of the stage's kind, operands in the operator's order.
void TwoOperandRow(const Stage& st, const int8_t* a, const int8_t* b, int8_t* out) {
  switch (st[kKind]) {
    case kAdd:
      AddRow(st, a, b, out);
      break;
    case kSub:
      SubRow(st, a, b, out);
      break;
    case kMul:
      MulRow(st, a, b, out);
      break;
    default:
      MinMaxRow(st, a, b, out);
      break;
  }
}

// Row y of a stage with a constant operand, first or second (SUB is not symmetric).
void ConstOperandRow(const Run& run, const Stage& st, const int8_t* activation, int32_t y,
                     int8_t* out) {
  const int8_t* c = ConstRow(run, st, y);
  if (st[kConstFirst] == 1) {
    TwoOperandRow(st, c, activation, out);
  } else {
    TwoOperandRow(st, activation, c, out);
  }
}

// PAD of rows and columns: the input's pixels moved, the rest the pad value.
void PadRow(const Stage& st, const Rows& in, int32_t y, int8_t* out) {
  const int32_t c = st[kOutC];
  const int8_t pad = static_cast<int8_t>(st[kPadValue]);
  const int32_t in_y = y - st[kPadTop];
  if (in_y < 0 || in_y >= st[kInH]) {
    std::memset(out, pad, static_cast<size_t>(st[kOutW]) * c);
    return;
  }
  const int8_t* row = in.Row(in_y);
  for (int32_t x = 0; x < st[kOutW]; ++x) {
    const int32_t in_x = x - st[kPadLeft];
    if (in_x < 0 || in_x >= st[kInW]) {
      std::memset(out + x * c, pad, static_cast<size_t>(c));
    } else {
      std::memcpy(out + x * c, row + in_x * c, static_cast<size_t>(c));
    }
  }
}

// CONCATENATION of two rows along the channels (any element type: TFLM copies the
// values): per pixel src0's in_c elements, then src1's out_c - in_c.
void ConcatRow(const Stage& st, const int8_t* a, const int8_t* b, int8_t* out) {
  const size_t bytes = static_cast<size_t>(ElementBytes(st[kElementType]));
  const size_t a_bytes = bytes * static_cast<size_t>(st[kInC]);
  const size_t b_bytes = bytes * static_cast<size_t>(st[kOutC] - st[kInC]);
  for (int32_t x = 0; x < st[kOutW]; ++x) {
    std::memcpy(out, a + x * a_bytes, a_bytes);
    std::memcpy(out + a_bytes, b + x * b_bytes, b_bytes);
    out += a_bytes + b_bytes;
  }
}

// ---- int16 stages ---------------------------------------------------------------
// int16 activations with int8 weights (element_type 1): TFLM's int16x8 reference
// arithmetic. CONV_2D: reference_integer_ops::ConvPerChannel<AccumScalar> on int16,
// its sum in int64 with an int64 bias, or in int32 (acc32: an int32 bias, or none
// and quantized_bias_type INT32; wrapping as TFLM's int32 sum does), scaled by
// MultiplyByQuantizedMultiplier on the sum's type; DEPTHWISE_CONV_2D: the int16
// DepthwiseConvPerChannel (int64 sum, int64 bias); pools: AveragePool and MaxPool on
// int16 (an int32 sum, the same rounding); ADD and SUB: AddElementwise and
// SubElementwise (left_shift 15); MUL: MulElementwise; RELU, RELU6, LEAKY_RELU:
// ReluQuantized, Relu6Quantized, QuantizeLeakyRelu on int16; PAD: Pad (the pad value
// 0). Zero points are 0 (Prepare), so the offsets applied below are 0.

// Row r of `in` as int16 elements.
const int16_t* Row16(const Rows& in, int32_t r) {
  return reinterpret_cast<const int16_t*>(in.Row(r));
}

int16_t Clamp16(int32_t value, const Stage& st) {
  if (value < st[kActMin]) value = st[kActMin];
  if (value > st[kActMax]) value = st[kActMax];
  return static_cast<int16_t>(value);
}

// The constants of an int16 convolution: one of the two biases (or none).
struct Weights16 {
  const int8_t* filter;
  const int64_t* bias64;      // an int64 bias; nullptr: none, or int32
  const int32_t* bias32;      // an int32 bias (CONV_2D summing in int32); nullptr: none
  const int32_t* multiplier;  // [out_c]
  const int32_t* shift;       // [out_c]
};

Weights16 WeightsOf16(const Run& run, const Stage& st) {
  Weights16 w = {nullptr, nullptr, nullptr, nullptr, nullptr};
  w.filter = micro::GetTensorData<int8_t>(micro::GetEvalInput(run.context, run.node, st[kFilter]));
  if (st[kBias] >= 0) {
    const TfLiteEvalTensor* bias = micro::GetEvalInput(run.context, run.node, st[kBias]);
    if (BiasType(st) == kTfLiteInt32) {
      w.bias32 = micro::GetTensorData<int32_t>(bias);
    } else {
      w.bias64 = micro::GetTensorData<int64_t>(bias);
    }
  }
  w.multiplier =
      micro::GetTensorData<int32_t>(micro::GetEvalInput(run.context, run.node, st[kQuant]));
  w.shift = w.multiplier + st[kOutC];
  return w;
}

// The sum of filter * input over the taps of a CONV_2D output pixel inside the
// tensor, in Acc: int64_t, or uint32_t (TFLM's int32 sum, wrapping modulo 2^32).
template <typename Acc>
Acc ConvTaps16(const Stage& st, const Rows& in, const int8_t* filter, int32_t in_y0,
               int32_t in_x0) {
  const int32_t in_h = st[kInH], in_w = st[kInW], in_c = st[kInC];
  const int32_t fh = st[kFilterH], fw = st[kFilterW];
  Acc acc = 0;
  for (int32_t ky = 0; ky < fh; ++ky) {
    const int32_t in_y = in_y0 + ky * st[kDilationH];
    if (in_y < 0 || in_y >= in_h) continue;  // outside the tensor: skipped
    const int16_t* row = Row16(in, in_y);
    for (int32_t kx = 0; kx < fw; ++kx) {
      const int32_t in_x = in_x0 + kx * st[kDilationW];
      if (in_x < 0 || in_x >= in_w) continue;
      const int16_t* pixel = row + in_x * in_c;
      const int8_t* taps = filter + (ky * fw + kx) * in_c;
      for (int32_t ic = 0; ic < in_c; ++ic) {
        acc += static_cast<Acc>(static_cast<int32_t>(taps[ic]) * pixel[ic]);
      }
    }
  }
  return acc;
}

// CONV_2D, filter [out_c, filter_h, filter_w, in_c], on int16.
void ConvRow16(const Stage& st, const Rows& in, const Weights16& w, int32_t y, int16_t* out) {
  const int32_t in_y0 = y * st[kStrideH] - st[kPadTop];
  const int32_t taps = st[kFilterH] * st[kFilterW] * st[kInC];
  for (int32_t x = 0; x < st[kOutW]; ++x) {
    const int32_t in_x0 = x * st[kStrideW] - st[kPadLeft];
    for (int32_t oc = 0; oc < st[kOutC]; ++oc) {
      const int8_t* filter = w.filter + oc * taps;
      int32_t scaled;
      if (st[kAcc32] == 1) {
        uint32_t acc = ConvTaps16<uint32_t>(st, in, filter, in_y0, in_x0);
        if (w.bias32 != nullptr) acc += static_cast<uint32_t>(w.bias32[oc]);
        scaled = MultiplyByQuantizedMultiplier(static_cast<int32_t>(acc), w.multiplier[oc],
                                               w.shift[oc]);
      } else {
        int64_t acc = ConvTaps16<int64_t>(st, in, filter, in_y0, in_x0);
        if (w.bias64 != nullptr) acc += w.bias64[oc];
        scaled = MultiplyByQuantizedMultiplier(acc, w.multiplier[oc], w.shift[oc]);
      }
      *out++ = Clamp16(scaled, st);
    }
  }
}

// DEPTHWISE_CONV_2D, filter [1, filter_h, filter_w, out_c], output channel
// ic * depth_multiplier + m, on int16: an int64 sum and an int64 bias.
void DepthwiseRow16(const Stage& st, const Rows& in, const Weights16& w, int32_t y,
                    int16_t* out) {
  const int32_t in_h = st[kInH], in_w = st[kInW], in_c = st[kInC], out_c = st[kOutC];
  const int32_t fh = st[kFilterH], fw = st[kFilterW], multiplier = st[kDepthMultiplier];
  const int32_t in_y0 = y * st[kStrideH] - st[kPadTop];
  for (int32_t x = 0; x < st[kOutW]; ++x) {
    const int32_t in_x0 = x * st[kStrideW] - st[kPadLeft];
    for (int32_t ic = 0; ic < in_c; ++ic) {
      for (int32_t m = 0; m < multiplier; ++m) {
        const int32_t oc = ic * multiplier + m;
        int64_t acc = 0;
        for (int32_t ky = 0; ky < fh; ++ky) {
          const int32_t in_y = in_y0 + ky * st[kDilationH];
          if (in_y < 0 || in_y >= in_h) continue;
          const int16_t* row = Row16(in, in_y);
          for (int32_t kx = 0; kx < fw; ++kx) {
            const int32_t in_x = in_x0 + kx * st[kDilationW];
            if (in_x < 0 || in_x >= in_w) continue;
            acc += static_cast<int64_t>(w.filter[(ky * fw + kx) * out_c + oc]) *
                   row[in_x * in_c + ic];
          }
        }
        if (w.bias64 != nullptr) acc += w.bias64[oc];
        *out++ = Clamp16(MultiplyByQuantizedMultiplier(acc, w.multiplier[oc], w.shift[oc]), st);
      }
    }
  }
}

// AVERAGE_POOL_2D and MAX_POOL_2D on int16 (the window clipped to the tensor, never
// empty; at most 65536 positions, so the int32 sum does not overflow: Prepare).
void PoolRow16(const Stage& st, const Rows& in, bool average, int32_t y, int16_t* out) {
  const int32_t in_c = st[kInC];
  const int32_t in_y0 = y * st[kStrideH] - st[kPadTop];
  const int32_t fy0 = in_y0 < 0 ? -in_y0 : 0;
  const int32_t fy1 = st[kFilterH] < st[kInH] - in_y0 ? st[kFilterH] : st[kInH] - in_y0;
  for (int32_t x = 0; x < st[kOutW]; ++x) {
    const int32_t in_x0 = x * st[kStrideW] - st[kPadLeft];
    const int32_t fx0 = in_x0 < 0 ? -in_x0 : 0;
    const int32_t fx1 = st[kFilterW] < st[kInW] - in_x0 ? st[kFilterW] : st[kInW] - in_x0;
    for (int32_t c = 0; c < in_c; ++c) {
      int32_t sum = 0;
      int32_t count = 0;
      int32_t max = INT16_MIN;
      for (int32_t fy = fy0; fy < fy1; ++fy) {
        const int16_t* row = Row16(in, in_y0 + fy);
        for (int32_t fx = fx0; fx < fx1; ++fx) {
          const int32_t value = row[(in_x0 + fx) * in_c + c];
          sum += value;
          if (value > max) max = value;
          ++count;
        }
      }
      *out++ = Clamp16(average ? RoundedAverage(sum, count) : max, st);
    }
  }
}

// ADD (or SUB, `subtract`) of two int16 rows: AddElementwise / SubElementwise.
void AddSubRow16(const Stage& st, const int16_t* a, const int16_t* b, bool subtract,
                 int16_t* out) {
  const int32_t n = st[kOutW] * st[kOutC];
  const int32_t scale = 1 << st[kLeftShift];
  for (int32_t i = 0; i < n; ++i) {
    const int32_t a_scaled = MultiplyByQuantizedMultiplierSmallerThanOneExp(
        (st[kInputOffset] + a[i]) * scale, st[kInput1Multiplier], st[kInput1Shift]);
    const int32_t b_scaled = MultiplyByQuantizedMultiplierSmallerThanOneExp(
        (st[kInput2Offset] + b[i]) * scale, st[kInput2Multiplier], st[kInput2Shift]);
    const int32_t raw = MultiplyByQuantizedMultiplierSmallerThanOneExp(
                            subtract ? a_scaled - b_scaled : a_scaled + b_scaled,
                            st[kOutputMultiplier], st[kOutputShift]) +
                        st[kOutputOffset];
    out[i] = Clamp16(raw, st);
  }
}

// MUL of two int16 rows: MulElementwise (the product of two int16 fits an int32).
void MulRow16(const Stage& st, const int16_t* a, const int16_t* b, int16_t* out) {
  const int32_t n = st[kOutW] * st[kOutC];
  for (int32_t i = 0; i < n; ++i) {
    const int32_t product = (st[kInputOffset] + a[i]) * (st[kInput2Offset] + b[i]);
    const int32_t raw =
        st[kOutputOffset] +
        MultiplyByQuantizedMultiplier(product, st[kOutputMultiplier], st[kOutputShift]);
    out[i] = Clamp16(raw, st);
  }
}

// RELU, RELU6, LEAKY_RELU and QUANTIZE of an int16 row (as ActivationRow for int8).
void ActivationRow16(const Stage& st, const int16_t* in, int16_t* out) {
  const int32_t n = st[kOutW] * st[kOutC];
  const int32_t kind = st[kKind];
  const bool negative_alpha = st[kInput2Multiplier] < 0;
  const int32_t alpha = negative_alpha ? -st[kInput2Multiplier] : st[kInput2Multiplier];
  for (int32_t i = 0; i < n; ++i) {
    if (kind == kRelu6) {
      out[i] = Clamp16(in[i], st);
      continue;
    }
    const int32_t value = in[i] + st[kInputOffset];
    int32_t raw = st[kOutputOffset];
    if (kind == kRelu || kind == kQuantize || value >= 0) {
      raw += MultiplyByQuantizedMultiplier(value, st[kOutputMultiplier], st[kOutputShift]);
    } else {
      const int32_t scaled = MultiplyByQuantizedMultiplier(value, alpha, st[kInput2Shift]);
      raw += negative_alpha ? -scaled : scaled;
    }
    out[i] = Clamp16(raw, st);
  }
}

// PAD of int16 rows and columns: the input's pixels moved, the rest the pad value.
void PadRow16(const Stage& st, const Rows& in, int32_t y, int16_t* out) {
  const int32_t c = st[kOutC];
  const int16_t pad = static_cast<int16_t>(st[kPadValue]);
  const int32_t in_y = y - st[kPadTop];
  const bool inside = in_y >= 0 && in_y < st[kInH];
  const int16_t* row = inside ? Row16(in, in_y) : nullptr;
  for (int32_t x = 0; x < st[kOutW]; ++x) {
    const int32_t in_x = x - st[kPadLeft];
    int16_t* pixel = out + x * c;
    if (!inside || in_x < 0 || in_x >= st[kInW]) {
      for (int32_t k = 0; k < c; ++k) pixel[k] = pad;
    } else {
      std::memcpy(pixel, row + in_x * c, sizeof(int16_t) * static_cast<size_t>(c));
    }
  }
}

// TRANSPOSE_CONV, filter [out_c, filter_h, filter_w, in_c], on int16: output pixel
// (y, x) gathers what TFLM's scatter adds to it, the input pixels (r, c) whose filter
// tap (y + pad_top - r*stride_h, x + pad_left - c*stride_w) lies inside the filter,
// as an int64 sum (exact, so the order of TFLM's scatter does not change it); then
// the int64 bias, MultiplyByQuantizedMultiplier on int64 and the clamp.
void TransposeConvRow16(const Stage& st, const Rows& in, const Weights16& w, int32_t y,
                        int16_t* out) {
  const int32_t in_w = st[kInW], in_c = st[kInC], fh = st[kFilterH], fw = st[kFilterW];
  const int32_t sh = st[kStrideH], sw = st[kStrideW];
  const int32_t top = y + st[kPadTop];
  int32_t r_lo = CeilDiv(top - fh + 1, sh), r_hi = top / sh;
  if (r_lo < 0) r_lo = 0;
  if (r_hi > st[kInH] - 1) r_hi = st[kInH] - 1;
  for (int32_t x = 0; x < st[kOutW]; ++x) {
    const int32_t left = x + st[kPadLeft];
    int32_t c_lo = CeilDiv(left - fw + 1, sw), c_hi = left / sw;
    if (c_lo < 0) c_lo = 0;
    if (c_hi > in_w - 1) c_hi = in_w - 1;
    for (int32_t oc = 0; oc < st[kOutC]; ++oc) {
      int64_t acc = 0;
      for (int32_t r = r_lo; r <= r_hi; ++r) {
        const int16_t* row = Row16(in, r);
        const int8_t* filter_row = w.filter + (oc * fh + (top - r * sh)) * fw * in_c;
        for (int32_t c = c_lo; c <= c_hi; ++c) {
          const int16_t* pixel = row + c * in_c;
          const int8_t* taps = filter_row + (left - c * sw) * in_c;
          for (int32_t ic = 0; ic < in_c; ++ic) {
            acc += static_cast<int64_t>(static_cast<int32_t>(taps[ic]) * pixel[ic]);
          }
        }
      }
      if (w.bias64 != nullptr) acc += w.bias64[oc];
      *out++ = Clamp16(MultiplyByQuantizedMultiplier(acc, w.multiplier[oc], w.shift[oc]), st);
    }
  }
}

// Row y of int16 stage s by the reference arithmetic.
void ComputeRow16(const Run& run, int32_t s, const Stage& st, const Rows& in, int32_t y) {
  int16_t* out = reinterpret_cast<int16_t*>(OutputRow(run, s, st, y));
  const int32_t kind = st[kKind];
  switch (kind) {
    case kConv:
      ConvRow16(st, in, WeightsOf16(run, st), y, out);
      break;
    case kDepthwise:
      DepthwiseRow16(st, in, WeightsOf16(run, st), y, out);
      break;
    case kTransposeConv:
      TransposeConvRow16(st, in, WeightsOf16(run, st), y, out);
      break;
    case kAvgPool:
    case kMaxPool:
      PoolRow16(st, in, kind == kAvgPool, y, out);
      break;
    case kAdd:
    case kSub:
      AddSubRow16(st, Row16(in, y), Row16(RowsOf(run, st[kSrc1], SourceRowBytes(st)), y),
                  kind == kSub, out);
      break;
    case kMul:
      MulRow16(st, Row16(in, y), Row16(RowsOf(run, st[kSrc1], SourceRowBytes(st)), y), out);
      break;
    case kRelu:
    case kRelu6:
    case kLeakyRelu:
    case kQuantize:
      ActivationRow16(st, Row16(in, y), out);
      break;
    case kPad:
      PadRow16(st, in, y, out);
      break;
    default:
      break;  // Prepare admits no other kind
  }
}

// MEAN_ROWS on int16: row r of the source added to the int32 sums, and the output.
void AddRowToSums16(const Run& run, int32_t s, int32_t r, int32_t* sums) {
  const int32_t in_w = Word(run.blob, s, kInW), in_c = Word(run.blob, s, kInC);
  const int16_t* row = Row16(RowsOf(run, Word(run.blob, s, kSrc0), in_w * in_c * 2), r);
  for (int32_t x = 0; x < in_w; ++x) {
    for (int32_t c = 0; c < in_c; ++c) sums[c] += row[x * in_c + c];
  }
}

void WriteMean16(const Stage& st, const int32_t* sums, int16_t* out) {
  const int32_t count = st[kInH] * st[kInW];
  for (int32_t c = 0; c < st[kOutC]; ++c) out[c] = Clamp16(RoundedAverage(sums[c], count), st);
}

#if defined(CMSIS_NN)
// Rows window.lo .. of the source, contiguous: in place (the input tensor, or a
// ring where they do not wrap), else copied to run.window.
const int8_t* WindowRows(const Run& run, const Rows& in, const ConvWindow& window) {
  const size_t row_bytes = static_cast<size_t>(in.row_bytes);
  if (in.ring_rows == 0) return in.base + window.lo * row_bytes;
  const int32_t slot = window.lo % in.ring_rows;
  if (slot + window.rows <= in.ring_rows) return in.base + slot * row_bytes;
  const int32_t first = in.ring_rows - slot;  // rows before the ring's end
  std::memcpy(run.window, in.base + slot * row_bytes, first * row_bytes);
  std::memcpy(run.window + first * row_bytes, in.base, (window.rows - first) * row_bytes);
  return run.window;
}

// Output rows y .. of a convolution by CMSIS-NN; false (said) if CMSIS-NN refuses.
bool CmsisConvRows(const Run& run, int32_t s, const Stage& st, const Rows& in, int32_t y,
                   const ConvWindow& window, int8_t* out) {
  CmsisCall call;
  Describe(run.blob, s, window, &call);
  const Weights w = WeightsOf(run, st);
  cmsis_nn_per_channel_quant_params quant = {const_cast<int32_t*>(w.multiplier),
                                             const_cast<int32_t*>(w.shift)};
  cmsis_nn_context ctx = {run.cmsis_buffer, 0};  // size: unread, as in TFLM's kernels
  const int8_t* rows = WindowRows(run, in, window);
  arm_cmsis_nn_status status;
  if (st[kConvPath] == kPathIm2col) {
    status = arm_convolve_s8(&ctx, &call.conv, &quant, &call.input, rows, &call.filter, w.filter,
                             &call.bias, w.bias, /*upscale_dims=*/nullptr, &call.output, out);
  } else if (st[kKind] == kConv) {
    status = arm_convolve_wrapper_s8(&ctx, &call.conv, &quant, &call.input, rows, &call.filter,
                                     w.filter, &call.bias, w.bias, &call.output, out);
  } else {
    status = arm_depthwise_conv_wrapper_s8(&ctx, &call.dw, &quant, &call.input, rows,
                                           &call.filter, w.filter, &call.bias, w.bias,
                                           &call.output, out);
  }
  if (status == ARM_CMSIS_NN_SUCCESS) return true;
  MicroPrintf("ARENAPLAN_CASCADE: stage %d row %d: CMSIS-NN refused the window (status %d)",
              static_cast<int>(s), static_cast<int>(y), static_cast<int>(status));
  return false;
}

// Output rows y .. of an int16 convolution by the CMSIS-NN function TFLM's kernel
// calls: arm_convolve_wrapper_s16 with its bias as TFLM passes it (an int64 bias as
// int64, an int32 one or none as int32), arm_depthwise_conv_s16 (int64 bias, no
// buffer); false (said) if CMSIS-NN refuses.
bool CmsisConvRows16(const Run& run, int32_t s, const Stage& st, const Rows& in, int32_t y,
                     const ConvWindow& window, int8_t* out) {
  CmsisCall call;
  Describe(run.blob, s, window, &call);
  const Weights16 w = WeightsOf16(run, st);
  cmsis_nn_per_channel_quant_params quant = {const_cast<int32_t*>(w.multiplier),
                                             const_cast<int32_t*>(w.shift)};
  cmsis_nn_context ctx = {run.cmsis_buffer, 0};  // size: unread, as in TFLM's kernels
  const int16_t* rows = reinterpret_cast<const int16_t*>(WindowRows(run, in, window));
  int16_t* out16 = reinterpret_cast<int16_t*>(out);
  arm_cmsis_nn_status status;
  if (st[kKind] == kConv) {
    const bool int32_bias = w.bias64 == nullptr;
    const void* bias = int32_bias ? static_cast<const void*>(w.bias32) : w.bias64;
    const cmsis_nn_bias_data bias_data = {bias, int32_bias};
    status = arm_convolve_wrapper_s16(&ctx, &call.conv, &quant, &call.input, rows, &call.filter,
                                      w.filter, &call.bias, &bias_data, &call.output, out16);
  } else {
    status = arm_depthwise_conv_s16(&ctx, &call.dw, &quant, &call.input, rows, &call.filter,
                                    w.filter, &call.bias, w.bias64, &call.output, out16);
  }
  if (status == ARM_CMSIS_NN_SUCCESS) return true;
  MicroPrintf("ARENAPLAN_CASCADE: stage %d row %d: CMSIS-NN refused the window (status %d)",
              static_cast<int>(s), static_cast<int>(y), static_cast<int>(status));
  return false;
}

// Output rows y .. of a pool by CMSIS-NN (arm_avgpool_s8, arm_max_pool_s8, as TFLM's
// CMSIS-NN pooling.cc): the window's rows outside it are its padding, as the rows
// outside the tensor are the whole operator's, so each output is the same sum (or
// maximum) over the same positions, divided by the same count; false (said) if
// CMSIS-NN refuses.
bool CmsisPoolRows(const Run& run, int32_t s, const Stage& st, const Rows& in, int32_t y,
                   const ConvWindow& window, int8_t* out) {
  const cmsis_nn_dims input = {1, window.rows, st[kInW], st[kInC]};
  const cmsis_nn_dims filter = {1, st[kFilterH], st[kFilterW], 1};
  const cmsis_nn_dims output = {1, window.out_rows, st[kOutW], st[kOutC]};
  const cmsis_nn_pool_params params = {{st[kStrideW], st[kStrideH]},
                                       {st[kPadLeft], window.pad_top},
                                       {st[kActMin], st[kActMax]}};
  cmsis_nn_context ctx = {run.cmsis_buffer, 0};
  const int8_t* rows = WindowRows(run, in, window);
  const arm_cmsis_nn_status status =
      st[kKind] == kAvgPool ? arm_avgpool_s8(&ctx, &params, &input, rows, &filter, &output, out)
                            : arm_max_pool_s8(&ctx, &params, &input, rows, &filter, &output, out);
  if (status == ARM_CMSIS_NN_SUCCESS) return true;
  MicroPrintf("ARENAPLAN_CASCADE: stage %d row %d: CMSIS-NN refused the pool's window (status %d)",
              static_cast<int>(s), static_cast<int>(y), static_cast<int>(status));
  return false;
}

// ---- Pointwise convolutions (conv_path 2) ------------------------------------------
// CMSIS-NN's C and DSP matrix products sum every filter again on each call (the input
// offset's share), about what one output pixel costs (C; a few with DSP): a call per
// step of a few pixels pays it every time. The pass folds that share into the bias
// once (bias + input_offset * sum of the channel's filter, an int32 tensor in flash),
// and here the step's pixels are multiplied without it: the same integer sums,
// requantised by arm_nn_requantize as CMSIS-NN does.

// The requantisation of a pointwise stage, its words read once per step.
struct PointwiseQuant {
  const int32_t* multiplier;
  const int32_t* shift;
  int32_t offset, low, high;  // output offset and clamp

  int8_t Out(int32_t acc, int32_t c) const {
    const int32_t v = arm_nn_requantize(acc, multiplier[c], shift[c]) + offset;
    return static_cast<int8_t>(v < low ? low : v > high ? high : v);
  }
};

// The sums of in_c products of pixels a and a + a_step (b) with filter rows f and
// f + f_step (f1), added to the four accumulators (a.f, a.f1, b.f, b.f1): with the DSP
// extension four channels at a time by SMLAD on sign-extended pairs of bytes (even,
// odd; CMSIS-NN's own helpers, in the order of its DSP matrix product, which keeps
// the temporaries in registers), in plain C two at a time. Integer sums: the same
// values every way.
inline void Dot2x2(const int8_t* a, const int8_t* f, int32_t a_step, int32_t f_step,
                   int32_t in_c, int32_t* acc) {
  int32_t a0 = acc[0], a1 = acc[1], b0 = acc[2], b1 = acc[3];
  int32_t i = 0;
#if defined(ARM_MATH_DSP)
  // one group of four channels at a + j (j = i, then i + 4 in the loop below)
#define ARENAPLAN_DOT2X2_FOUR(j)                        \
  do {                                                  \
    uint32_t k0 = arm_nn_read_s8x4(f + (j));            \
    const uint32_t k0_e = SXTB16(k0);                   \
    uint32_t x = arm_nn_read_s8x4(a + (j));             \
    uint32_t x_e = SXTB16(x);                           \
    uint32_t k1 = arm_nn_read_s8x4(f + f_step + (j));   \
    k0 = SXTB16_RORn(k0, 8);                            \
    x = SXTB16_RORn(x, 8);                              \
    a0 = SMLAD(x_e, k0_e, a0);                          \
    const uint32_t k1_e = SXTB16(k1);                   \
    a0 = SMLAD(x, k0, a0);                              \
    k1 = SXTB16_RORn(k1, 8);                            \
    a1 = SMLAD(x_e, k1_e, a1);                          \
    a1 = SMLAD(x, k1, a1);                              \
    x = arm_nn_read_s8x4(a + a_step + (j));             \
    x_e = SXTB16(x);                                    \
    x = SXTB16_RORn(x, 8);                              \
    b0 = SMLAD(x_e, k0_e, b0);                          \
    b1 = SMLAD(x_e, k1_e, b1);                          \
    b0 = SMLAD(x, k0, b0);                              \
    b1 = SMLAD(x, k1, b1);                              \
  } while (0)
  for (; i + 8 <= in_c; i += 8) {  // two groups an iteration: less loop per product
    ARENAPLAN_DOT2X2_FOUR(i);
    ARENAPLAN_DOT2X2_FOUR(i + 4);
  }
  if (i + 4 <= in_c) {
    ARENAPLAN_DOT2X2_FOUR(i);
    i += 4;
  }
#undef ARENAPLAN_DOT2X2_FOUR
#else
  for (; i + 1 < in_c; i += 2) {  // two input channels an iteration
    int32_t x0 = a[i], x1 = a[a_step + i], k0 = f[i], k1 = f[f_step + i];
    a0 += x0 * k0;
    a1 += x0 * k1;
    b0 += x1 * k0;
    b1 += x1 * k1;
    x0 = a[i + 1];
    x1 = a[a_step + i + 1];
    k0 = f[i + 1];
    k1 = f[f_step + i + 1];
    a0 += x0 * k0;
    a1 += x0 * k1;
    b0 += x1 * k0;
    b1 += x1 * k1;
  }
#endif
  for (; i < in_c; ++i) {
    const int32_t x0 = a[i], x1 = a[a_step + i], k0 = f[i], k1 = f[f_step + i];
    a0 += x0 * k0;
    a1 += x0 * k1;
    b0 += x1 * k0;
    b1 += x1 * k1;
  }
  acc[0] = a0;
  acc[1] = a1;
  acc[2] = b0;
  acc[3] = b1;
}

// The same for one pixel a: a.f0, a.f1.
inline void Dot1x2(const int8_t* a, const int8_t* f0, const int8_t* f1, int32_t in_c,
                   int32_t* acc) {
  int32_t a0 = acc[0], a1 = acc[1];
  int32_t i = 0;
#if defined(ARM_MATH_DSP)
  for (; i + 4 <= in_c; i += 4) {
    const uint32_t x = arm_nn_read_s8x4(a + i);
    const uint32_t k0 = arm_nn_read_s8x4(f0 + i), k1 = arm_nn_read_s8x4(f1 + i);
    const uint32_t x_e = SXTB16(x), x_o = SXTB16_RORn(x, 8);
    a0 = SMLAD(x_e, SXTB16(k0), SMLAD(x_o, SXTB16_RORn(k0, 8), a0));
    a1 = SMLAD(x_e, SXTB16(k1), SMLAD(x_o, SXTB16_RORn(k1, 8), a1));
  }
#endif
  for (; i < in_c; ++i) {
    const int32_t x0 = a[i];
    a0 += x0 * f0[i];
    a1 += x0 * f1[i];
  }
  acc[0] = a0;
  acc[1] = a1;
}

// Output channels c, c1 of pixels a and b (two pixels, 2x2 sums, as CMSIS-NN's C
// matrix product takes them) from the folded bias.
inline void PointwiseBlock(const PointwiseQuant& q, const Weights& w, const int8_t* a,
                           const int8_t* b, int32_t in_c, int32_t c, int32_t c1, int8_t* oa,
                           int8_t* ob) {
  int32_t acc[4] = {w.bias[c], w.bias[c1], w.bias[c], w.bias[c1]};
  Dot2x2(a, w.filter + c * in_c, static_cast<int32_t>(b - a), (c1 - c) * in_c, in_c, acc);
  oa[c] = q.Out(acc[0], c);
  oa[c1] = q.Out(acc[1], c1);
  ob[c] = q.Out(acc[2], c);
  ob[c1] = q.Out(acc[3], c1);
}

// The same for one pixel a.
inline void PointwiseSingle(const PointwiseQuant& q, const Weights& w, const int8_t* a,
                            int32_t in_c, int32_t c, int32_t c1, int8_t* oa) {
  int32_t acc[2] = {w.bias[c], w.bias[c1]};
  Dot1x2(a, w.filter + c * in_c, w.filter + c1 * in_c, in_c, acc);
  oa[c] = q.Out(acc[0], c);
  oa[c1] = q.Out(acc[1], c1);
}

// `pixels` pixels of in_c channels at `in` (contiguous) into out_c channels each at
// `out`: two pixels and two channels at a time (an odd last pixel alone, an odd last
// channel computed twice).
void PointwisePixels(const Stage& st, const Weights& w, const int8_t* in, int32_t pixels,
                     int8_t* out) {
  const int32_t in_c = st[kInC], out_c = st[kOutC];
  const PointwiseQuant q = {w.multiplier, w.shift, st[kOutputOffset], st[kActMin], st[kActMax]};
  int32_t p = 0;
  for (; p + 1 < pixels; p += 2) {
    const int8_t* a = in + p * in_c;
    int8_t* oa = out + p * out_c;
    for (int32_t c = 0; c < out_c; c += 2) {
      PointwiseBlock(q, w, a, a + in_c, in_c, c, c + 1 < out_c ? c + 1 : c, oa, oa + out_c);
    }
  }
  if (p == pixels) return;
  for (int32_t c = 0; c < out_c; c += 2) {
    PointwiseSingle(q, w, in + p * in_c, in_c, c, c + 1 < out_c ? c + 1 : c, out + p * out_c);
  }
}

// Output rows y .. y+n-1 of a pointwise convolution: its source rows y .. y+n-1, in
// place, in two pieces where they wrap around the source's ring (no copy).
void PointwiseRows(const Run& run, const Stage& st, const Rows& in, int32_t y, int32_t n,
                   int8_t* out) {
  const Weights w = WeightsOf(run, st);
  const int32_t width = st[kInW];
  int32_t first = n;  // rows before the ring's end
  if (in.ring_rows > 0 && y % in.ring_rows + n > in.ring_rows) first = in.ring_rows - y % in.ring_rows;
  PointwisePixels(st, w, in.Row(y), first * width, out);
  if (first < n) {
    PointwisePixels(st, w, in.Row(y + first), (n - first) * width,
                    out + first * width * st[kOutC]);
  }
}
#endif  // CMSIS_NN

// Row y of stage s by the reference arithmetic.
void ComputeRow(const Run& run, int32_t s, const Stage& st, const Rows& in, int32_t y) {
  if (st[kKind] == kConcat) {
    const int32_t second = st[kInW] * (st[kOutC] - st[kInC]) * ElementBytes(st[kElementType]);
    ConcatRow(st, in.Row(y), RowsOf(run, st[kSrc1], second).Row(y), OutputRow(run, s, st, y));
    return;
  }
  if (st[kElementType] == kInt16) {
    ComputeRow16(run, s, st, in, y);
    return;
  }
  int8_t* out = OutputRow(run, s, st, y);
  if (st[kConstInput] >= 0) {
    ConstOperandRow(run, st, in.Row(y), y, out);
    return;
  }
  switch (st[kKind]) {
    case kConv:
      ConvRow(st, in, WeightsOf(run, st), y, out);
      break;
    case kDepthwise:
      DepthwiseRow(st, in, WeightsOf(run, st), y, out);
      break;
    case kAvgPool:
    case kMaxPool:
      PoolRow(st, in, st[kKind] == kAvgPool, y, out);
      break;
    case kAdd:
      AddRow(st, in.Row(y), RowsOf(run, st[kSrc1], st[kInW] * st[kInC]).Row(y), out);
      break;
    case kSub:
      SubRow(st, in.Row(y), RowsOf(run, st[kSrc1], st[kInW] * st[kInC]).Row(y), out);
      break;
    case kMul:
      MulRow(st, in.Row(y), RowsOf(run, st[kSrc1], st[kInW] * st[kInC]).Row(y), out);
      break;
    case kMinimum:
    case kMaximum:
      MinMaxRow(st, in.Row(y), RowsOf(run, st[kSrc1], st[kInW] * st[kInC]).Row(y), out);
      break;
    case kRelu:
    case kRelu6:
    case kLeakyRelu:
    case kQuantize:
      ActivationRow(st, in.Row(y), out);
      break;
    case kPad:
      PadRow(st, in, y, out);
      break;
    default:
      break;  // Prepare admits no other kind
  }
}

// Rows y .. y+n-1 of stage s (any kind but MEAN_ROWS), their source rows made and
// readable; false (said) when CMSIS-NN refuses a step.
// (lo, hi: the source rows the step reads, Compute's NeededBlock; hi < lo: none.)
TFLITE_NOINLINE bool ComputeRows(const Run& run, int32_t s, int32_t y, int32_t n, int32_t lo,
                                 int32_t hi) {
  Stage st;
  Decode(run.blob, s, &st);
  const Rows in = RowsOf(run, st[kSrc0], SourceRowBytes(st));
#if defined(CMSIS_NN)
  const bool conv = st[kKind] == kConv || st[kKind] == kDepthwise;
  if (conv && st[kElementType] == kInt16) {
    const ConvWindow window = lo <= hi ? WindowOfRows(run.blob, s, y, n, lo, hi) : EmptyWindow(n);
    return CmsisConvRows16(run, s, st, in, y, window, OutputRow(run, s, st, y));
  }
  if (st[kConvPath] == kPathPointwise) {
    PointwiseRows(run, st, in, y, n, OutputRow(run, s, st, y));
    return true;
  }
  if (Windowed(st[kKind], st[kElementType]) && lo <= hi) {
    const ConvWindow window = WindowOfRows(run.blob, s, y, n, lo, hi);
    int8_t* out = OutputRow(run, s, st, y);
    if (st[kKind] == kAvgPool || st[kKind] == kMaxPool) {
      return CmsisPoolRows(run, s, st, in, y, window, out);
    }
    return CmsisConvRows(run, s, st, in, y, window, out);
  }
#else
  (void)lo;
  (void)hi;
#endif
  for (int32_t k = 0; k < n; ++k) ComputeRow(run, s, st, in, y + k);
  return true;
}

// MEAN_ROWS's int32[out_c] sums in the scratch buffer (acc_offset is 4-aligned,
// and TFLM aligns the scratch buffer).
int32_t* Sums(const Run& run, int32_t s) {
  return reinterpret_cast<int32_t*>(run.scratch + Word(run.blob, s, kAccOffset));
}

TFLITE_NOINLINE void ClearSums(const Run& run, int32_t s) {
  std::memset(Sums(run, s), 0, 4 * static_cast<size_t>(Word(run.blob, s, kOutC)));
}

TFLITE_NOINLINE void AddRowToSums(const Run& run, int32_t s, int32_t r) {
  if (Word(run.blob, s, kElementType) == kInt16) {
    AddRowToSums16(run, s, r, Sums(run, s));
    return;
  }
  const int32_t in_w = Word(run.blob, s, kInW), in_c = Word(run.blob, s, kInC);
  const int8_t* row = RowsOf(run, Word(run.blob, s, kSrc0), in_w * in_c).Row(r);
  int32_t* sums = Sums(run, s);
  for (int32_t x = 0; x < in_w; ++x) {
    for (int32_t c = 0; c < in_c; ++c) sums[c] += row[x * in_c + c];
  }
}

// The one output row: AVERAGE_POOL_2D's rounding over in_h * in_w positions.
TFLITE_NOINLINE void WriteMean(const Run& run, int32_t s) {
  Stage st;
  Decode(run.blob, s, &st);
  int8_t* out = OutputRow(run, s, st, 0);
  const int32_t* sums = Sums(run, s);
  if (st[kElementType] == kInt16) {
    WriteMean16(st, sums, reinterpret_cast<int16_t*>(out));
    return;
  }
  const int32_t count = st[kInH] * st[kInW];
  for (int32_t c = 0; c < st[kOutC]; ++c) out[c] = Clamp(RoundedAverage(sums[c], count), st);
}

// MEAN's one output row: reference_ops::QuantizedMeanOrSum, the sum less the input's
// zero point times the count (in int64, then int32 as TFLM's int32 sum type),
// requantised by the multiplier and shift Prepare's rescaling by the count gives
// (computed by arenaplan, in the record), plus the output's zero point, clamped.
TFLITE_NOINLINE void WriteRequantizedMean(const Run& run, int32_t s) {
  Stage st;
  Decode(run.blob, s, &st);
  int8_t* out = OutputRow(run, s, st, 0);
  const int32_t* sums = Sums(run, s);
  const int64_t count = int64_t{st[kInH]} * st[kInW];
  for (int32_t c = 0; c < st[kOutC]; ++c) {
    const int32_t shifted = static_cast<int32_t>(sums[c] + int64_t{st[kInputOffset]} * count);
    const int32_t value =
        MultiplyByQuantizedMultiplier(shifted, st[kOutputMultiplier], st[kOutputShift]) +
        st[kOutputOffset];
    out[c] = Clamp(value, st);
  }
}

// ---- The pull recursion: make and compute --------------------------------------

void Compute(Run* run, int32_t s, int32_t y);

// Rows of the step of stage s that starts at row y: block_rows, fewer at the end.
int32_t StepRows(const uint8_t* blob, int32_t s, int32_t y) {
  const int32_t left = Word(blob, s, kOutH) - y;
  const int32_t block = BlockRows(blob, s);
  return left < block ? left : block;
}

// make(s, r): stage s's rows up to r computed, a step at a time (nothing for the
// input, s = -1).
void Make(Run* run, int32_t s, int32_t r) {
  if (s < 0) return;
  while (run->ok && run->next[s] <= r) {
    const int32_t y = run->next[s];
    Compute(run, s, y);
    run->next[s] += StepRows(run->blob, s, y);
  }
}

// MEAN_ROWS, MEAN: sums = 0; per input row r: make(src0, r), add row r; then the
// output.
void ComputeMean(Run* run, int32_t s) {
  const int32_t src = Word(run->blob, s, kSrc0);
  const int32_t in_h = Word(run->blob, s, kInH);
  ClearSums(*run, s);
  for (int32_t r = 0; r < in_h; ++r) {
    Make(run, src, r);
    if (!run->ok || !Readable(run, s, src, r, r)) return;
    AddRowToSums(*run, s, r);
  }
  if (Word(run->blob, s, kKind) == kMean) {
    WriteRequantizedMean(*run, s);
  } else {
    WriteMean(*run, s);
  }
}

// compute(s, y): the step of rows y .. y+n-1: make the last row their needs reach
// (for ADD, MUL, SUB also src1's row y+n-1), then compute them.
void Compute(Run* run, int32_t s, int32_t y) {
  const int32_t kind = Word(run->blob, s, kKind);
  if (WholeInput(kind)) {
    ComputeMean(run, s);
    return;
  }
  const int32_t src0 = Word(run->blob, s, kSrc0);
  const bool two = TwoInputs(kind);
  const int32_t src1 = two ? Word(run->blob, s, kSrc1) : -1;
  const int32_t n = StepRows(run->blob, s, y);
  int32_t lo = 0, hi = -1;
  const bool reads = NeededBlock(run->blob, s, y, n, &lo, &hi);
  if (reads) Make(run, src0, hi);
  if (two) Make(run, src1, y + n - 1);
  if (!run->ok) return;
  if (reads && !Readable(run, s, src0, lo, hi)) return;
  if (two && !Readable(run, s, src1, y, y + n - 1)) return;
  if (!ComputeRows(*run, s, y, n, lo, reads ? hi : lo - 1)) run->ok = false;
}

TfLiteStatus Eval(TfLiteContext* context, TfLiteNode* node) {
  const OpData* data = static_cast<const OpData*>(node->user_data);
  Chain chain;
  if (!ParseOptions(node, /*verify=*/false, &chain)) return kTfLiteError;
  Run run;
  run.context = context;
  run.node = node;
  run.blob = chain.blob;
  run.stages = chain.stages;
  run.input = micro::GetTensorData<int8_t>(micro::GetEvalInput(context, node, 0));
  run.output = micro::GetTensorData<int8_t>(micro::GetEvalOutput(context, node, 0));
  run.scratch = data->scratch_index < 0 ? nullptr
                                        : static_cast<int8_t*>(GetMicroContext(context)
                                                                   ->GetScratchBuffer(
                                                                       data->scratch_index));
  run.window = nullptr;
  run.cmsis_buffer = nullptr;
#if defined(CMSIS_NN)
  if (data->work_index >= 0) {
    int8_t* work =
        static_cast<int8_t*>(GetMicroContext(context)->GetScratchBuffer(data->work_index));
    const int64_t window = WindowBytes(run.blob, run.stages);
    run.window = work;
    // CMSIS-NN's buffer follows the window's rows (WorkBytes). Where CMSIS-NN asked for
    // none, no function it calls reads it: the pointer (inside the arena) is passed
    // unread, and Eval does not ask every step's size again.
    run.cmsis_buffer = work + Align16(window);
  }
#endif
  run.ok = true;
  for (int32_t s = 0; s < run.stages; ++s) run.next[s] = 0;
  const int32_t last = run.stages - 1;
  const int32_t out_h = Word(run.blob, last, kOutH);
  for (int32_t y = 0; y < out_h && run.ok; y += StepRows(run.blob, last, y)) {
    Compute(&run, last, y);
  }
  return run.ok ? kTfLiteOk : kTfLiteError;
}

}  // namespace

TFLMRegistration* Register_ARENAPLAN_CASCADE() {
  static TFLMRegistration registration = micro::RegisterOp(Init, Prepare, Eval);
  return &registration;
}

}  // namespace tflite
