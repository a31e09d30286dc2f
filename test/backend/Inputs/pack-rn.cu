// Host check of tdsl_pack_rn, how a run of f16 or bf16 values kept as f32
// is rounded where the run is stored (backend: BufferRef::RoundAtStore):
// bit for bit the pair that rounding each value alone (__float2half_rn,
// __float2bfloat16_rn) then tdsl_pack's order (the first value in the low
// half) gives; NaN for NaN. Edges (zeros, the types' subnormals, largest
// values and the ties around them, infinities, NaN) pairwise, then every
// 257th float against its neighbours.
#include <tdsl/device.cuh>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

long Checked = 0, Failed = 0;

bool isNaN16(uint16_t H, bool BF) {
  return BF ? (H & 0x7f80u) == 0x7f80u && (H & 0x7fu) : (H & 0x7c00u) == 0x7c00u && (H & 0x3ffu);
}

void check(float Lo, float Hi) {
  const uint16_t WantH[2] = {__half_as_ushort(__float2half_rn(Lo)),
                             __half_as_ushort(__float2half_rn(Hi))};
  const uint16_t WantB[2] = {__bfloat16_as_ushort(__float2bfloat16_rn(Lo)),
                             __bfloat16_as_ushort(__float2bfloat16_rn(Hi))};
  const uint32_t GotH = tdsl_generated::tdsl_pack_rn<__half>(Lo, Hi);
  const uint32_t GotB = tdsl_generated::tdsl_pack_rn<__nv_bfloat16>(Lo, Hi);
  for (int BF = 0; BF < 2; ++BF) {
    const uint32_t Got = BF ? GotB : GotH;
    const uint16_t *Want = BF ? WantB : WantH;
    for (int I = 0; I < 2; ++I) {
      ++Checked;
      const uint16_t G = uint16_t(Got >> (16 * I));
      if (G != Want[I] && !(isNaN16(G, BF) && isNaN16(Want[I], BF)) && Failed++ < 10)
        std::printf("FAILED (%s): pack_rn(%a, %a) half %d gave %04x, want %04x\n",
                    BF ? "bf16" : "f16", double(Lo), double(Hi), I, G, Want[I]);
    }
  }
}

} // namespace

int main() {
  std::vector<float> Edges = {0.0f, 1.0f, 1.0f / 3.0f, 65504.0f, 65519.0f, 65520.0f, 65536.0f,
                              0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1p-14f, 0x1.ff8p-15f,
                              0x1.0101p0f, 0x1.0180p0f, 0x1.00ff8p0f, 3.3895314e38f, FLT_MAX,
                              0x1p-126f, 0x1p-149f, INFINITY, NAN};
  const size_t Unsigned = Edges.size();
  for (size_t I = 0; I < Unsigned; ++I)
    Edges.push_back(-Edges[I]);
  for (float A : Edges)
    for (float B : Edges)
      check(A, B);
  for (uint64_t U = 0; U < (uint64_t(1) << 32); U += 257)
    check(tdsl_generated::tdsl_bit_cast<float>(uint32_t(U)),
          tdsl_generated::tdsl_bit_cast<float>(uint32_t(U + 1)));
  std::printf("pack_rn: %ld halves, %ld wrong\n", Checked, Failed);
  return Failed != 0;
}
