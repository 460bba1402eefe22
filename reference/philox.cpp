#include "reference/philox.h"

#include <Random123/philox.h>

namespace nvfp4 {

PhiloxCounter philox4x32_10(const PhiloxCounter& counter, const PhiloxKey& key) {
  const r123::Philox4x32_R<10> philox;
  const r123::Philox4x32_R<10>::ctr_type c = {{counter.x, counter.y, counter.z, counter.w}};
  const r123::Philox4x32_R<10>::key_type k = {{key.x, key.y}};
  const r123::Philox4x32_R<10>::ctr_type o = philox(c, k);
  return {o[0], o[1], o[2], o[3]};
}

}  // namespace nvfp4
