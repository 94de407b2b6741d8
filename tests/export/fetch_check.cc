// Test driver: run a generated fetch schedule (fetch.h) against a weights blob and
// compute each output-channel group with TFLM's reference kernels, from the bytes
// the schedule copied; compare with TFLM's output of the whole operator.
//
//   fetch_check BLOB PARAMS INPUT EXPECTED OP
//
// PARAMS (text): kind (0 conv, 1 depthwise: int8; 2 conv, 3 depthwise: int16x8, the
// bias read as int64, as TFLM's int16x8 kernels read it), in_h in_w in_c, out_h out_w out_c,
// kh kw, stride_h stride_w, dilation_h dilation_w, padding (0 SAME, 1 VALID),
// depth_multiplier, input zero point, output zero point, activation min and max,
// input scale, output scale, then one filter scale per output channel (floats
// as C99 hex). Prints "ok GROUPS BYTES" or the first difference; exit 1 on it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "fetch.h"
#include "tensorflow/lite/kernels/internal/quantization_util.h"
#include "tensorflow/lite/kernels/internal/reference/integer_ops/conv.h"
#include "tensorflow/lite/kernels/internal/reference/integer_ops/depthwise_conv.h"

namespace {

struct Params {
  int kind, in_h, in_w, in_c, out_h, out_w, out_c, kh, kw, sh, sw, dh, dw, valid, dm;
  int in_zp, out_zp, act_min, act_max;
  double in_scale, out_scale;
  std::vector<double> filter_scales;
};

bool ReadParams(const char* path, Params* p) {
  FILE* f = std::fopen(path, "r");
  if (!f) return false;
  int n = std::fscanf(f, "%d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %la %la",
                      &p->kind, &p->in_h, &p->in_w, &p->in_c, &p->out_h, &p->out_w, &p->out_c,
                      &p->kh, &p->kw, &p->sh, &p->sw, &p->dh, &p->dw, &p->valid, &p->dm,
                      &p->in_zp, &p->out_zp, &p->act_min, &p->act_max, &p->in_scale,
                      &p->out_scale);
  bool ok = n == 21;
  for (int c = 0; ok && c < p->out_c; ++c) {
    double s;
    ok = std::fscanf(f, "%la", &s) == 1;
    p->filter_scales.push_back(s);
  }
  std::fclose(f);
  return ok;
}

std::vector<uint8_t> ReadFile(const char* path) {
  std::vector<uint8_t> data;
  FILE* f = std::fopen(path, "rb");
  if (!f) return data;
  int c;
  while ((c = std::fgetc(f)) != EOF) data.push_back(static_cast<uint8_t>(c));
  std::fclose(f);
  return data;
}

// TFLM's padding for one dimension (kernels/padding.h: ComputePaddingWithOffset).
int Padding(int stride, int dilation, int in, int k, int out, bool valid) {
  if (valid) return 0;
  int effective = (k - 1) * dilation + 1;
  int total = (out - 1) * stride + effective - in;
  return total > 0 ? total / 2 : 0;
}

tflite::RuntimeShape Shape(int a, int b, int c, int d) {
  const int32_t dims[4] = {a, b, c, d};
  return tflite::RuntimeShape(4, dims);
}

uint32_t copied = 0;
void CountingCopy(void* dst, const void* src, uint32_t bytes, void*) {
  std::memcpy(dst, src, bytes);
  copied += bytes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) return 2;
  Params p;
  if (!ReadParams(argv[2], &p)) return 2;
  std::vector<uint8_t> blob = ReadFile(argv[1]);
  std::vector<uint8_t> in = ReadFile(argv[3]);
  std::vector<uint8_t> expected = ReadFile(argv[4]);
  int op = std::atoi(argv[5]);
  static uint8_t memory0[1 << 20];
  uint8_t* bases[1] = {memory0};

  std::vector<int32_t> mult(p.out_c), shift(p.out_c);
  for (int c = 0; c < p.out_c; ++c) {
    tflite::QuantizeMultiplier(p.in_scale * p.filter_scales[c] / p.out_scale, &mult[c], &shift[c]);
  }
  const bool wide = p.kind >= 2;  // int16 activations, int64 biases
  const int kind = p.kind % 2;
  const size_t esize = wide ? 2 : 1;  // bytes per activation
  std::vector<uint8_t> out(expected.size());
  int groups = 0;
  for (uint16_t g = 0;; ++g) {
    const arenaplan_fetch_t* f = nullptr;
    for (int i = 0; i < ARENAPLAN_FETCH_COUNT; ++i) {
      if (arenaplan_fetches[i].op == op && arenaplan_fetches[i].group == g) f = &arenaplan_fetches[i];
    }
    if (!f) break;
    uint8_t* block = arenaplan_fetch_group(op, g, blob.data(), bases, CountingCopy, nullptr);
    const int first = f->first, n = f->channels;
    const int8_t* filter = reinterpret_cast<const int8_t*>(block);
    const int32_t* bias = reinterpret_cast<const int32_t*>(block + f->bias);
    const int64_t* bias64 = reinterpret_cast<const int64_t*>(block + f->bias);
    tflite::ConvParams cp{};
    tflite::DepthwiseParams dp{};
    int pad_h = Padding(p.sh, p.dh, p.in_h, p.kh, p.out_h, p.valid);
    int pad_w = Padding(p.sw, p.dw, p.in_w, p.kw, p.out_w, p.valid);
    std::vector<uint8_t> part(static_cast<size_t>(p.out_h) * p.out_w * n * esize);
    tflite::RuntimeShape out_shape = Shape(1, p.out_h, p.out_w, n);
    const int32_t bias_dims[1] = {n};
    tflite::RuntimeShape bias_shape(1, bias_dims);
    if (kind == 0) {
      cp.padding_values.width = static_cast<int16_t>(pad_w);
      cp.padding_values.height = static_cast<int16_t>(pad_h);
      cp.stride_width = p.sw, cp.stride_height = p.sh;
      cp.dilation_width_factor = p.dw, cp.dilation_height_factor = p.dh;
      cp.input_offset = -p.in_zp, cp.output_offset = p.out_zp;
      cp.quantized_activation_min = p.act_min, cp.quantized_activation_max = p.act_max;
      if (wide) {
        tflite::reference_integer_ops::ConvPerChannel<int64_t>(
            cp, &mult[first], &shift[first], Shape(1, p.in_h, p.in_w, p.in_c),
            reinterpret_cast<const int16_t*>(in.data()), Shape(n, p.kh, p.kw, p.in_c), filter,
            bias_shape, bias64, out_shape, reinterpret_cast<int16_t*>(part.data()));
      } else {
        tflite::reference_integer_ops::ConvPerChannel(
            cp, &mult[first], &shift[first], Shape(1, p.in_h, p.in_w, p.in_c),
            reinterpret_cast<const int8_t*>(in.data()), Shape(n, p.kh, p.kw, p.in_c), filter,
            bias_shape, bias, out_shape, reinterpret_cast<int8_t*>(part.data()));
      }
    } else {
      int in_first = first / p.dm, in_n = n / p.dm;  // groups hold whole multiplier sets
      std::vector<uint8_t> slice(static_cast<size_t>(p.in_h) * p.in_w * in_n * esize);
      for (int i = 0; i < p.in_h * p.in_w; ++i) {
        std::memcpy(&slice[i * in_n * esize], &in[(i * p.in_c + in_first) * esize], in_n * esize);
      }
      dp.padding_values.width = static_cast<int16_t>(pad_w);
      dp.padding_values.height = static_cast<int16_t>(pad_h);
      dp.stride_width = p.sw, dp.stride_height = p.sh;
      dp.dilation_width_factor = p.dw, dp.dilation_height_factor = p.dh;
      dp.depth_multiplier = p.dm;
      dp.input_offset = -p.in_zp, dp.output_offset = p.out_zp;
      dp.quantized_activation_min = p.act_min, dp.quantized_activation_max = p.act_max;
      if (wide) {
        tflite::reference_integer_ops::DepthwiseConvPerChannel(
            dp, &mult[first], &shift[first], Shape(1, p.in_h, p.in_w, in_n),
            reinterpret_cast<const int16_t*>(slice.data()), Shape(1, p.kh, p.kw, n), filter,
            bias_shape, bias64, out_shape, reinterpret_cast<int16_t*>(part.data()));
      } else {
        tflite::reference_integer_ops::DepthwiseConvPerChannel(
            dp, &mult[first], &shift[first], Shape(1, p.in_h, p.in_w, in_n),
            reinterpret_cast<const int8_t*>(slice.data()), Shape(1, p.kh, p.kw, n), filter,
            bias_shape, bias, out_shape, reinterpret_cast<int8_t*>(part.data()));
      }
    }
    for (int i = 0; i < p.out_h * p.out_w; ++i) {
      std::memcpy(&out[(i * p.out_c + first) * esize], &part[i * n * esize], n * esize);
    }
    ++groups;
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] != expected[i]) {
      std::printf("differs at byte %zu: %d, TFLM %d (groups %d)\n", i, out[i], expected[i],
                  groups);
      return 1;
    }
  }
  std::printf("ok %d %u\n", groups, copied);
  return groups > 0 ? 0 : 1;
}
