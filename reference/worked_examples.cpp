#include "reference/worked_examples.h"

#include <fmt/format.h>

#include "reference/dequantize.h"
#include "reference/formulas.h"
#include "reference/layout.h"
#include "reference/profiles.h"
#include "reference/quantize.h"

namespace nvfp4 {
namespace {

using U = std::uint32_t;
float F(U bits) { return float_of(bits); }

const Profile& P(const char* name) { return find_profile(name)->knobs; }

// One element of one block through a profile's whole chain (§4.1), keeping the intermediates.
struct Trace {
  GlobalScale gs;
  BlockEncoding block;
  float y;
  std::uint8_t code;
};
Trace trace(const Profile& p, float g, float A, float x) {
  Trace t;
  t.gs = global_scale(p.gs, g);
  t.block = encode_block(p, t.gs, g, A);
  t.y = scale_element(p, t.block.encoder, x);
  t.code = encode_element(p, t.block.encoder, x);
  return t;
}

// Quantizes a 16 x 16 tensor whose row 0 is `block` (other rows 0) with the global amax `g`
// (computed when absent), 1D rowwise; returns (scale byte, 16 codes) of block (0, 0).
struct BlockResult {
  std::uint8_t scale;
  std::uint8_t codes[16];
};
BlockResult quantize_block0(const char* profile, const std::vector<float>& block, std::optional<float> g) {
  FloatMatrix x = xt::zeros<float>({16, 16});
  for (std::size_t i = 0; i < block.size(); ++i) x(0, i) = block[i];
  QuantizeOptions o;
  o.profile = P(profile);
  o.amax = g;
  const Quantization q = quantize(x, o);
  BlockResult r{q.rowwise->scale(0, 0), {}};
  for (int i = 0; i < 16; ++i) r.codes[i] = nibble_at(q.rowwise->data(0, i / 2), i % 2);
  return r;
}

// Codes 0..7 of a block as 8 nibbles (code i at bits 4i), for one-number comparisons.
U codes_low8(const BlockResult& r) {
  U v = 0;
  for (int i = 0; i < 8; ++i) v |= U(r.codes[i]) << (4 * i);
  return v;
}

// Appends one example to the list being built.
class Add {
 public:
  explicit Add(std::vector<WorkedExample>& ex) : ex_(ex) {}
  void operator()(std::string section, std::string name, U expected, std::function<U()> compute) const {
    ex_.push_back({std::move(section), std::move(name), expected, std::move(compute)});
  }

 private:
  std::vector<WorkedExample>& ex_;
};

// §6.1 constants: computed with one RN operation each, and equal to the named constants.
void add_constants(const Add& add) {
  const std::string c = "6.1 constants";
  add(c, "RN(1/6)", 0x3E2AAAAB, [] { return bits_of(div_rn(1.0f, 6.0f)); });
  add(c, "RN(1/2688)", 0x39C30C31, [] { return bits_of(div_rn(1.0f, 2688.0f)); });
  add(c, "RN(1/1536)", 0x3A2AAAAB, [] { return bits_of(div_rn(1.0f, 1536.0f)); });
  add(c, "RN(1/7225344)", 0x34149B93, [] { return bits_of(div_rn(1.0f, 7225344.0f)); });
  add(c, "RN(2688/FLT_MAX)", 0x05280001, [] { return bits_of(div_rn(2688.0f, constants::flt_max())); });
  add(c, "RN(1/FLT_MAX)", 0x00200000, [] { return bits_of(div_rn(1.0f, constants::flt_max())); });
  add(c, "RN(6*RN(1/6))", 0x3F800000, [] { return bits_of(mul_rn(6.0f, div_rn(1.0f, 6.0f))); });
  add(c, "RN(1/1e8)", 0x322BCC77, [] { return bits_of(div_rn(1.0f, constants::k1e8)); });
  add(c, "constant r6", constants::kRecip6Bits, [] { return bits_of(div_rn(1.0f, 6.0f)); });
  add(c, "constant r2688", constants::kRecip2688Bits, [] { return bits_of(div_rn(1.0f, 2688.0f)); });
  add(c, "constant r7225344", constants::kRecip7225344Bits, [] { return bits_of(div_rn(1.0f, 7225344.0f)); });
  add(c, "constant RN(1/1e8)", constants::kRecip1e8Bits, [] { return bits_of(div_rn(1.0f, constants::k1e8)); });
}

// §6.2 E2M1 HW ties and neighbours.
void add_e2m1_hw(const Add& add) {
  const std::pair<U, U> hw[] = {{0x3E800000, 0x0}, {0x3E800001, 0x1}, {0x3F3FFFFF, 0x1}, {0x3F400000, 0x2}, {0x3FA00000, 0x2},
                                {0x3FA00001, 0x3}, {0x3FDFFFFF, 0x3}, {0x3FE00000, 0x4}, {0x40200000, 0x4}, {0x40200001, 0x5},
                                {0x405FFFFF, 0x5}, {0x40600000, 0x6}, {0x40A00000, 0x6}, {0x40A00001, 0x7}, {0x40C00000, 0x7},
                                {0x40D00000, 0x7}, {0x00000001, 0x0}, {0x80000001, 0x8}, {0xBE800000, 0x8}, {0xBE800001, 0x9}};
  for (auto [in, code] : hw) add("6.2 E2M1 HW", fmt::format("e2m1(0x{:08X})", in), code, [in] { return U(e2m1_hw(F(in))); });
}

// §6.3 E2M1 special values per encoder (TABLE_TE after tclamp to +-6, as its profiles do).
void add_e2m1_specials(const Add& add) {
  const U specials[] = {0x80000000, 0xBA83126F, 0x7FC00000, 0xFFC00000, 0x7FFFFFFF, 0x7F800000, 0xFF800000};
  const struct {
    E2M1Encoder enc;
    const char* name;
    U codes[7];
  } per_encoder[] = {
      {E2M1Encoder::HW, "HW", {0x8, 0x8, 0x7, 0x7, 0x7, 0x7, 0xF}},
      {E2M1Encoder::TABLE_TE, "TABLE_TE", {0x0, 0x8, 0x0, 0x0, 0x0, 0x7, 0xF}},
      {E2M1Encoder::SEARCHSORTED, "SEARCHSORTED", {0x0, 0x8, 0x7, 0x7, 0x7, 0x7, 0xF}},
      {E2M1Encoder::TORCHAO_INT, "TORCHAO_INT", {0x8, 0x8, 0x3, 0xB, 0x4, 0x7, 0xF}},
      {E2M1Encoder::MLDTYPES, "MLDTYPES", {0x8, 0x8, 0x8, 0x0, 0x8, 0x7, 0xF}},
  };
  for (const auto& e : per_encoder)
    for (int i = 0; i < 7; ++i) {
      const U in = specials[i];
      const E2M1Encoder enc = e.enc;
      const bool clamp = enc == E2M1Encoder::TABLE_TE;
      add("6.3 E2M1 specials", fmt::format("{}(0x{:08X})", e.name, in), e.codes[i],
          [=] { return U(e2m1_encode(enc, clamp ? tclamp(F(in), -6.0f, 6.0f) : F(in))); });
    }
}

// §6.4 E4M3 casts.
void add_e4m3_casts(const Add& add) {
  const U e4[][3] = {{0x43E00000, 0x7E, 0x7E}, {0x43E40000, 0x7E, 0x7E}, {0x43E80000, 0x7E, 0x7E}, {0x43E80001, 0x7E, 0x7F},
                     {0x43F00000, 0x7E, 0x7F}, {0x7149F2CA, 0x7E, 0x7F}, {0x7F800000, 0x7E, 0x7F}, {0xFF800000, 0xFE, 0xFF},
                     {0x7FC00000, 0x7F, 0x7F}, {0xFFC00000, 0x7F, 0xFF}, {0x3A800000, 0x00, 0x00}, {0x3A800001, 0x01, 0x01},
                     {0x3B000000, 0x01, 0x01}, {0x3B400000, 0x02, 0x02}, {0x3C800000, 0x08, 0x08}, {0x80000000, 0x80, 0x80},
                     {0x42280000, 0x62, 0x62}, {0x42280001, 0x63, 0x63}, {0x4227FFFF, 0x62, 0x62}, {0x42380000, 0x64, 0x64},
                     {0x43E00001, 0x7E, 0x7E}};
  for (const auto& r : e4) {
    const U in = r[0];
    add("6.4 E4M3 casts", fmt::format("e4m3sat(0x{:08X})", in), r[1], [in] { return U(e4m3sat(F(in))); });
    add("6.4 E4M3 casts", fmt::format("e4m3torch(0x{:08X})", in), r[2], [in] { return U(e4m3torch(F(in))); });
  }
}

// §6.5 E4M3 decoding.
void add_e4m3_decode(const Add& add) {
  const std::pair<U, float> f8[] = {
      {0x01, 0.001953125f}, {0x07, 0.013671875f}, {0x08, 0.015625f}, {0x14, 0.046875f}, {0x38, 1.0f},
      {0x62, 40.0f},        {0x63, 44.0f},        {0x64, 48.0f},     {0x68, 64.0f},     {0x69, 72.0f},
      {0x6E, 112.0f},       {0x76, 224.0f},       {0x78, 256.0f},    {0x7E, 448.0f},    {0x7F, float_of(kCanonicalNanBits)},
      {0x80, -0.0f}};
  for (auto [b, v] : f8)
    add("6.5 E4M3 decode", fmt::format("f8(0x{:02X})", b), bits_of(v), [b = b] { return bits_of(e4m3_decode(std::uint8_t(b))); });
}

// §6.6 global scale per GS rule.
void add_global_scales(const Add& add) {
  const U gs_rows[][6] = {
      // g,        TE S_enc,   TE S_dec,   TE_PYREF S,  TE_HELPER S
      {0x00000000, 0x3F800000, 0x3F800000, 0x7F7FFFFF, 0x3F800000},
      {0x7F800000, 0x3F800000, 0x3F800000, 0x3F800000, 0x00000000},
      {0x7FC00000, 0x7F7FFFFF, 0x00200000, kCanonicalNanBits, 0x3F800000},
      {0x00000001, 0x7F7FFFFF, 0x00200000, 0x7F7FFFFF, 0x7F7FFFFF},
      {0x006CE3EE, 0x7F7FFFFF, 0x00200000, 0x7F7FFFFF, 0x7F7FFFFF},
      {0x05280000, 0x7F7FFFFF, 0x00200000, 0x7F7FFFFF, 0x7F7FFFFF},
      {0x05280001, 0x7F7FFFFE, 0x00200000, 0x7F7FFFFE, 0x7F7FFFFE},
      {0x3F800000, 0x45280000, 0x39C30C31, 0x45280000, 0x45280000},
      {0x40C00000, 0x43E00000, 0x3B124925, 0x43E00000, 0x43E00000},
      {0x46A80000, 0x3E000000, 0x41000000, 0x3E000000, 0x3E000000},
      {0x7F7FFFFF, 0x05280001, 0x79C30C30, 0x05280001, 0x05280001},
  };
  for (const auto& r : gs_rows) {
    const U g = r[0];
    const std::string s = "6.6 global scale";
    add(s, fmt::format("TE S_enc(0x{:08X})", g), r[1], [g] { return bits_of(global_scale(GlobalScaleRule::TE, F(g)).S); });
    add(s, fmt::format("TE S_dec(0x{:08X})", g), r[2], [g] { return bits_of(global_scale(GlobalScaleRule::TE, F(g)).Sd); });
    add(s, fmt::format("TE_PYREF S(0x{:08X})", g), r[3],
        [g] { return bits_of(global_scale(GlobalScaleRule::TE_PYREF, F(g)).S); });
    add(s, fmt::format("TE_HELPER S(0x{:08X})", g), r[4],
        [g] { return bits_of(global_scale(GlobalScaleRule::TE_HELPER, F(g)).S); });
  }
  add("6.6 global scale", "TE_RHT_FUSED S(+inf)", 0x00000000,
      [] { return bits_of(global_scale(GlobalScaleRule::TE_RHT_FUSED, F(0x7F800000)).S); });
  add("6.6 global scale", "TE_RHT_FUSED S(NaN)", 0x3F800000,
      [] { return bits_of(global_scale(GlobalScaleRule::TE_RHT_FUSED, F(0x7FC00000)).S); });
}

// §6.7 Example A: same scale byte, different code.
void add_example_a(const Add& add) {
  const std::string s = "6.7 Example A";
  const float g = F(0x40BA0000), A = F(0x3F5F0000), x = F(0x3E780000);
  add(s, "te S_enc", 0x43E739CE, [=] { return bits_of(trace(P("te"), g, A, x).gs.S); });
  add(s, "te S_dec", 0x3B0DB6DC, [=] { return bits_of(trace(P("te"), g, A, x).gs.Sd); });
  add(s, "te sd", 0x42864792, [=] { return bits_of(trace(P("te"), g, A, x).block.precast); });
  add(s, "te enc", 0x40E739CE, [=] { return bits_of(trace(P("te"), g, A, x).block.encoder.factor); });
  for (const char* p : {"te", "te-2.13", "te-2.13-1d", "miles", "vllm-emul", "torchao", "mslk", "modelopt"}) {
    const bool modelopt = std::string(p) == "modelopt";
    add(s, fmt::format("{} scale byte", p), 0x68, [=] { return U(trace(P(p), g, A, x).block.scale_byte); });
    add(s, fmt::format("{} y", p), modelopt ? 0x3FDFFFFF : 0x3FE00000, [=] { return bits_of(trace(P(p), g, A, x).y); });
    add(s, fmt::format("{} code", p), modelopt ? 0x3 : 0x4, [=] { return U(trace(P(p), g, A, x).code); });
  }
  add(s, "torchao pts", 0x3B0DB6DC, [=] { return bits_of(trace(P("torchao"), g, A, x).gs.pts); });
  add(s, "torchao t", 0x42864792, [=] { return bits_of(trace(P("torchao"), g, A, x).block.precast); });
  add(s, "torchao enc", 0x40E739CE, [=] { return bits_of(trace(P("torchao"), g, A, x).block.encoder.factor); });
  add(s, "mslk gs", 0x43E739CE, [=] { return bits_of(trace(P("mslk"), g, A, x).gs.gs); });
  add(s, "modelopt w2", 0x3B0DB6DC, [=] { return bits_of(trace(P("modelopt"), g, A, x).gs.w2); });
  add(s, "modelopt t", 0x42864791, [=] { return bits_of(trace(P("modelopt"), g, A, x).block.precast); });
  add(s, "modelopt RN(sf*w2)", 0x3E0DB6DC, [=] { return bits_of(trace(P("modelopt"), g, A, x).block.encoder.factor); });
}

// §6.8 Example B: the scale byte differs between TE >= 2.14 and orders that round A/6 first.
void add_example_b(const Add& add) {
  const std::string s = "6.8 Example B";
  const float g = F(0x40820000), A = F(0x3EC30000);
  const struct {
    const char* p;
    U t, byte;
  } rows[] = {{"te", 0x42280001, 0x63},    {"te-2.13", 0x42280000, 0x62},  {"te-2.13-1d", 0x42280000, 0x62},
              {"miles", 0x42280000, 0x62}, {"torchao", 0x42280000, 0x62},  {"modelopt", 0x4227FFFF, 0x62},
              {"mslk", 0x4227FFFF, 0x62},  {"vllm-emul", 0x4227FFFF, 0x62}};
  for (const auto& r : rows) {
    const char* p = r.p;
    add(s, fmt::format("{} t", p), r.t, [=] { return bits_of(trace(P(p), g, A, A).block.precast); });
    add(s, fmt::format("{} scale byte", p), r.byte, [=] { return U(trace(P(p), g, A, A).block.scale_byte); });
  }
  add(s, "te S", 0x44256A57, [=] { return bits_of(trace(P("te"), g, A, A).gs.S); });
  add(s, "mslk gs", 0x44256A56, [=] { return bits_of(trace(P("mslk"), g, A, A).gs.gs); });
  add(s, "vllm-emul G", 0x44256A56, [=] { return bits_of(trace(P("vllm-emul"), g, A, A).gs.G); });
  add(s, "torchao pts", 0x3AC61862, [=] { return bits_of(trace(P("torchao"), g, A, A).gs.pts); });
  add(s, "te enc", 0x41709AAD, [=] { return bits_of(trace(P("te"), g, A, A).block.encoder.factor); });
  add(s, "te-2.13 enc", 0x41845513, [=] { return bits_of(trace(P("te-2.13"), g, A, A).block.encoder.factor); });
  const struct {
    U x, te_y, te_code, te213_y, te213_code, other_code;
  } elems[] = {{0x3EA40000, 0x409A2317, 0x6, 0x40A98D00, 0x7, 0x7},
               {0xBE280000, 0xC01DE582, 0xC, 0xC02DAFA9, 0xD, 0xD},
               {0x3EC30000, 0x40B745D2, 0x7, 0x40C9999B, 0x7, 0x7},
               {0x3E800000, 0x40709AAD, 0x6, 0x40845513, 0x6, 0x6}};
  for (const auto& e : elems) {
    const float x = F(e.x);
    add(s, fmt::format("te y(0x{:08X})", e.x), e.te_y, [=] { return bits_of(trace(P("te"), g, A, x).y); });
    add(s, fmt::format("te code(0x{:08X})", e.x), e.te_code, [=] { return U(trace(P("te"), g, A, x).code); });
    add(s, fmt::format("te-2.13 y(0x{:08X})", e.x), e.te213_y, [=] { return bits_of(trace(P("te-2.13"), g, A, x).y); });
    add(s, fmt::format("te-2.13 code(0x{:08X})", e.x), e.te213_code, [=] { return U(trace(P("te-2.13"), g, A, x).code); });
    for (const char* p : {"torchao", "mslk", "modelopt", "miles"})
      add(s, fmt::format("{} code(0x{:08X})", p, e.x), e.other_code, [=] { return U(trace(P(p), g, A, x).code); });
  }
}

// §6.9 Example C: code flips in the other direction.
void add_example_c(const Add& add) {
  const std::string s = "6.9 Example C";
  const float g1 = F(0x40D50000), A1 = F(0x3F330000), x1 = F(0xBED50000);
  for (const char* p : {"te", "te-2.13", "te-2.13-1d", "miles", "torchao", "mslk", "modelopt", "vllm-emul"})
    add(s, fmt::format("C1 {} scale byte", p), 0x64, [=] { return U(trace(P(p), g1, A1, x1).block.scale_byte); });
  for (const char* p : {"te", "te-2.13", "te-2.13-1d", "miles"}) {
    add(s, fmt::format("C1 {} y", p), 0xC0600001, [=] { return bits_of(trace(P(p), g1, A1, x1).y); });
    add(s, fmt::format("C1 {} code", p), 0xE, [=] { return U(trace(P(p), g1, A1, x1).code); });
  }
  add(s, "C1 te enc", 0x41069C3F, [=] { return bits_of(trace(P("te"), g1, A1, x1).block.encoder.factor); });
  add(s, "C1 torchao enc", 0x41069C3E, [=] { return bits_of(trace(P("torchao"), g1, A1, x1).block.encoder.factor); });
  for (const char* p : {"torchao", "mslk", "modelopt", "vllm-emul"}) {
    add(s, fmt::format("C1 {} y", p), 0xC05FFFFF, [=] { return bits_of(trace(P(p), g1, A1, x1).y); });
    add(s, fmt::format("C1 {} code", p), 0xD, [=] { return U(trace(P(p), g1, A1, x1).code); });
  }
  const float g2 = F(0x40E40000), A2 = F(0x3A490000), x2 = F(0x39E40000);
  for (const char* p : {"te", "te-2.13", "te-2.13-1d", "miles", "torchao", "mslk", "modelopt", "vllm-emul"})
    add(s, fmt::format("C2 {} scale byte", p), 0x14, [=] { return U(trace(P(p), g2, A2, x2).block.scale_byte); });
  add(s, "C2 te enc", 0x45FB823E, [=] { return bits_of(trace(P("te"), g2, A2, x2).block.encoder.factor); });
  add(s, "C2 mslk enc", 0x45FB823F, [=] { return bits_of(trace(P("mslk"), g2, A2, x2).block.encoder.factor); });
  for (const char* p : {"te", "te-2.13", "miles", "modelopt", "vllm-emul"}) {
    add(s, fmt::format("C2 {} y", p), 0x405FFFFF, [=] { return bits_of(trace(P(p), g2, A2, x2).y); });
    add(s, fmt::format("C2 {} code", p), 0x5, [=] { return U(trace(P(p), g2, A2, x2).code); });
  }
  for (const char* p : {"torchao", "mslk", "te-2.13-1d"}) {
    add(s, fmt::format("C2 {} y", p), 0x40600000, [=] { return bits_of(trace(P(p), g2, A2, x2).y); });
    add(s, fmt::format("C2 {} code", p), 0x6, [=] { return U(trace(P(p), g2, A2, x2).code); });
  }
}

// §6.10 Example D: global quantities.
void add_example_d(const Add& add) {
  const std::string s = "6.10 Example D";
  const float g = F(0x3FA60000);
  add(s, "miles weight_scale_2", 0x39FCF3CE,
      [=] { return bits_of(exported_global(P("miles"), global_scale(GlobalScaleRule::TE_PYREF, g), g)); });
  add(s, "modelopt weight_scale_2 (CUDA)", 0x39FCF3D0,
      [=] { return bits_of(exported_global(P("modelopt"), global_scale(GlobalScaleRule::PTS, g), g)); });
  add(s, "pts on CPU RN(g/2688)", 0x39FCF3CF, [=] { return bits_of(global_scale(GlobalScaleRule::PTS_CPU, g).pts); });
  const float g2 = F(0x3F870000);
  add(s, "TE S_enc", 0x451F49F5, [=] { return bits_of(global_scale(GlobalScaleRule::TE, g2).S); });
  add(s, "vLLM G", 0x451F49F4, [=] { return bits_of(global_scale(GlobalScaleRule::G_CALLER, g2).G); });
  add(s, "PyTorch 2688/amax = RN(RN(1/g)*2688)", 0x451F49F4, [=] { return bits_of(mul_rn(div_rn(1.0f, g2), 2688.0f)); });
}

// §6.11 scale saturation and an exact unit encode factor.
void add_saturation(const Add& add) {
  const std::string s = "6.11 saturation";
  add(s, "S_enc(6)", 0x43E00000, [] { return bits_of(trace(P("te"), 6.0f, 6.0f, 1.0f).gs.S); });
  add(s, "S_dec(6)", 0x3B124925, [] { return bits_of(trace(P("te"), 6.0f, 6.0f, 1.0f).gs.Sd); });
  add(s, "RN(S*r6)", 0x42955556, [] { return bits_of(mul_rn(F(0x43E00000), constants::recip6())); });
  const std::pair<float, U> tiles[][2] = {{{6.0f, 0x43E00001}, {6.0f, 0x7E}},
                                          {{3.0f, 0x43600001}, {3.0f, 0x76}},
                                          {{1.5f, 0x42E00001}, {1.5f, 0x6E}},
                                          {{0.75f, 0x42600001}, {0.75f, 0x66}}};
  for (const auto& t : tiles) {
    const float A = t[0].first;
    add(s, fmt::format("sd(A={})", A), t[0].second, [=] { return bits_of(trace(P("te"), 6.0f, A, 1.0f).block.precast); });
    add(s, fmt::format("scale(A={})", A), t[1].second, [=] { return U(trace(P("te"), 6.0f, A, 1.0f).block.scale_byte); });
  }
  add(s, "enc(A=g=6)", 0x3F800000, [] { return bits_of(trace(P("te"), 6.0f, 6.0f, 1.0f).block.encoder.factor); });
  const std::vector<float> nan_block = {float_of(0x7FC00000), 1.0f};
  add(s, "te NaN block scale", 0x69, [=] { return U(quantize_block0("te", nan_block, 6.0f).scale); });
  add(s, "te NaN block enc", 0x40C71C71, [] { return bits_of(trace(P("te"), 6.0f, 1.0f, 1.0f).block.encoder.factor); });
  add(s, "te NaN block codes 0..7", 0x00000077, [=] { return codes_low8(quantize_block0("te", nan_block, 6.0f)); });
}

// §6.12 block underflow (no lower clamp).
void add_block_underflow(const Add& add) {
  const std::string s = "6.12 block underflow";
  const float g = F(0x49800000), A = F(0x35800000);
  add(s, "S_enc", 0x3B280000, [=] { return bits_of(trace(P("te"), g, A, A).gs.S); });
  add(s, "S_dec", 0x43C30C31, [=] { return bits_of(trace(P("te"), g, A, A).gs.Sd); });
  add(s, "RN(S*r6)", 0x39E00000, [=] { return bits_of(mul_rn(trace(P("te"), g, A, A).gs.S, constants::recip6())); });
  add(s, "sd", 0x2FE00000, [=] { return bits_of(trace(P("te"), g, A, A).block.precast); });
  add(s, "scale byte", 0x00, [=] { return U(trace(P("te"), g, A, A).block.scale_byte); });
  add(s, "te enc", 0x7F7FFFFF, [=] { return bits_of(trace(P("te"), g, A, A).block.encoder.factor); });
  add(s, "miles enc", 0x7F800000, [=] { return bits_of(trace(P("miles"), g, A, A).block.encoder.factor); });
  const float sub = F(0x00010000), zero = 0.0f;
  add(s, "te y(A)", 0x757FFFFF, [=] { return bits_of(trace(P("te"), g, A, A).y); });
  add(s, "te code(A)", 0x7, [=] { return U(trace(P("te"), g, A, A).code); });
  add(s, "te y(bf16 subnormal)", 0x3CFFFFFF, [=] { return bits_of(trace(P("te"), g, A, sub).y); });
  add(s, "te code(bf16 subnormal)", 0x0, [=] { return U(trace(P("te"), g, A, sub).code); });
  add(s, "te code(+0)", 0x0, [=] { return U(trace(P("te"), g, A, zero).code); });
  add(s, "miles code(A)", 0x7, [=] { return U(trace(P("miles"), g, A, A).code); });
  add(s, "miles code(bf16 subnormal)", 0x7, [=] { return U(trace(P("miles"), g, A, sub).code); });
  add(s, "miles code(+0)", 0x0, [=] { return U(trace(P("miles"), g, A, zero).code); });
  add(s, "te-2.13-1d zero block enc", 0x7F800000,
      [=] { return bits_of(trace(P("te-2.13-1d"), g, 0.0f, zero).block.encoder.factor); });
  add(s, "te-2.13-1d zero block code(+0)", 0x7, [=] { return U(trace(P("te-2.13-1d"), g, 0.0f, zero).code); });
}

// §6.13 dequantization chains.
void add_dequantization(const Add& add) {
  const std::string s = "6.13 dequantization";
  const struct {
    U sf, g, te, sd_chain, pts_chain;
  } rows[] = {{0x68, 0x40BA0000, 0x3E0DB6DC, 0x3E0DB6DC, 0x3E0DB6DC},
              {0x64, 0x40D50000, 0x3DF36DB7, 0x3DF36DB6, 0x3DF36DB8},
              {0x7E, 0x40400000, 0x3F000000, 0x3F000000, 0x3F000000}};
  for (const auto& r : rows) {
    const std::uint8_t sf = std::uint8_t(r.sf);
    const float g = F(r.g);
    // Code 0x2 (1.0) exposes the chain's block factor itself.
    add(s, fmt::format("TE fs(sf=0x{:02X})", r.sf), r.te,
        [=] { return bits_of(dequantize_element(P("te"), global_scale(GlobalScaleRule::TE, g), g, sf, 0x2)); });
    add(s, fmt::format("RN(sf*S_dec)(sf=0x{:02X})", r.sf), r.sd_chain,
        [=] { return bits_of(mul_rn(e4m3_decode(sf), global_scale(GlobalScaleRule::TE, g).Sd)); });
    add(s, fmt::format("PTS RN(pts*sf)(sf=0x{:02X})", r.sf), r.pts_chain,
        [=] { return bits_of(dequantize_element(P("torchao"), global_scale(GlobalScaleRule::PTS, g), g, sf, 0x2)); });
  }
  const float g = F(0x40D50000);
  add(s, "TE code 0x7", 0x3F369249,
      [=] { return bits_of(dequantize_element(P("te"), global_scale(GlobalScaleRule::TE, g), g, 0x64, 0x7)); });
  add(s, "TE code 0x3", 0x3E369249,
      [=] { return bits_of(dequantize_element(P("te"), global_scale(GlobalScaleRule::TE, g), g, 0x64, 0x3)); });
  add(s, "RN(6*RN(sf*S_dec))", 0x3F369248,
      [=] { return bits_of(mul_rn(6.0f, mul_rn(48.0f, global_scale(GlobalScaleRule::TE, g).Sd))); });
}

// §6.14 swizzle offsets (C' = 8).
void add_swizzle(const Add& add) {
  const std::pair<int, int> rc[] = {{0, 0},  {0, 1},  {0, 3},   {0, 4},   {1, 0},   {31, 0},  {32, 0},
                                    {64, 0}, {96, 0}, {127, 3}, {128, 0}, {130, 5}, {255, 7}, {33, 0}};
  const U offsets[] = {0, 1, 3, 512, 16, 496, 4, 8, 12, 511, 1024, 1569, 2047, 20};
  for (std::size_t i = 0; i < std::size(rc); ++i) {
    const auto [r, col] = rc[i];
    add("6.14 swizzle", fmt::format("off({}, {})", r, col), offsets[i],
        [r = r, col = col] { return U(swizzled_offset(r, col, 8)); });
  }
}

// §6.15 storage shapes and element positions for x[112, 96].
void add_storage(const Add& add) {
  const std::string s = "6.15 storage";
  auto q = [] {
    FloatMatrix x = xt::zeros<float>({112, 96});
    x(3, 5) = 6.0f;
    QuantizeOptions o;
    o.profile = P("te");
    o.direction = Direction::kBoth;
    return quantize(x, o);
  };
  add(s, "rowwise data shape", (112u << 16) | 48u, [=] {
    auto r = q();
    return U(r.rowwise->data.shape(0) << 16 | r.rowwise->data.shape(1));
  });
  add(s, "rowwise scale shape", (128u << 16) | 8u, [=] {
    auto r = q();
    return U(r.rowwise->scale.shape(0) << 16 | r.rowwise->scale.shape(1));
  });
  add(s, "columnwise data shape", (96u << 16) | 56u, [=] {
    auto r = q();
    return U(r.columnwise->data.shape(0) << 16 | r.columnwise->data.shape(1));
  });
  add(s, "columnwise scale shape", (128u << 16) | 8u, [=] {
    auto r = q();
    return U(r.columnwise->scale.shape(0) << 16 | r.columnwise->scale.shape(1));
  });
  add(s, "rowwise byte 146 (element (3,5), high nibble)", 0x70, [=] { return U(q().rowwise->data.data()[146]); });
  add(s, "columnwise byte 281 (element (3,5), high nibble)", 0x70, [=] { return U(q().columnwise->data.data()[281]); });
}

// §6.20 te-pyref vs te.
void add_te_pyref(const Add& add) {
  const std::string s = "6.20 te-pyref vs te";
  const std::vector<float> neg_zero = {-0.0f};
  add(s, "te all-zero tensor: -0.0 code", 0x8, [=] { return U(quantize_block0("te", neg_zero, std::nullopt).codes[0]); });
  add(s, "te all-zero tensor: scale", 0x00, [=] { return U(quantize_block0("te", neg_zero, std::nullopt).scale); });
  add(s, "te-pyref g=0: S", 0x7F7FFFFF, [] { return bits_of(global_scale(GlobalScaleRule::TE_PYREF, 0.0f).S); });
  add(s, "te-pyref g=0: S_dec", 0x00200000, [] { return bits_of(global_scale(GlobalScaleRule::TE_PYREF, 0.0f).Sd); });
  add(s, "te-pyref all-zero tensor: -0.0 code", 0x0,
      [=] { return U(quantize_block0("te-pyref", neg_zero, std::nullopt).codes[0]); });
  add(s, "te-pyref all-zero tensor: scale", 0x00, [=] { return U(quantize_block0("te-pyref", neg_zero, std::nullopt).scale); });
  const std::vector<float> mixed = {1.0f, -0.0f};
  add(s, "te -0.0 in a nonzero block", 0x8, [=] { return U(quantize_block0("te", mixed, std::nullopt).codes[1]); });
  add(s, "te-pyref -0.0 in a nonzero block", 0x0, [=] { return U(quantize_block0("te-pyref", mixed, std::nullopt).codes[1]); });
  const std::vector<float> nan_block = {float_of(0x7FC00000), 1.0f};
  add(s, "te-pyref g=6 NaN block scale", 0x7F, [=] { return U(quantize_block0("te-pyref", nan_block, 6.0f).scale); });
  add(s, "te-pyref g=6 NaN block codes 0..7", 0x0, [=] { return codes_low8(quantize_block0("te-pyref", nan_block, 6.0f)); });
  // te ignores the NaN: g = A = 1, so the block scale saturates and the NaN element codes 0x7.
  add(s, "te NaN in tensor, g computed: scale", 0x7E, [=] { return U(quantize_block0("te", nan_block, std::nullopt).scale); });
  add(s, "te NaN in tensor, g computed: codes 0..7", 0x77,
      [=] { return codes_low8(quantize_block0("te", nan_block, std::nullopt)); });
  add(s, "te-pyref NaN in tensor, g computed: scale", 0x7F,
      [=] { return U(quantize_block0("te-pyref", nan_block, std::nullopt).scale); });
  add(s, "te-pyref NaN in tensor, g computed: codes 0..7", 0x0,
      [=] { return codes_low8(quantize_block0("te-pyref", nan_block, std::nullopt)); });
}

std::vector<WorkedExample> build() {
  std::vector<WorkedExample> ex;
  const Add add(ex);
  add_constants(add);
  add_e2m1_hw(add);
  add_e2m1_specials(add);
  add_e4m3_casts(add);
  add_e4m3_decode(add);
  add_global_scales(add);
  add_example_a(add);
  add_example_b(add);
  add_example_c(add);
  add_example_d(add);
  add_saturation(add);
  add_block_underflow(add);
  add_dequantization(add);
  add_swizzle(add);
  add_storage(add);
  add_te_pyref(add);
  return ex;
}

}  // namespace

const std::vector<WorkedExample>& worked_examples() {
  static const std::vector<WorkedExample> examples = build();
  return examples;
}

}  // namespace nvfp4
