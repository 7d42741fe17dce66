#include "fucina/core/device.h"

namespace fucina {

std::string_view name(Device device) {
  switch (device) {
    case Device::cpu: return "cpu";
    case Device::webgpu: return "webgpu";
  }
  return "?";
}

std::string_view name(Backend backend) {
  switch (backend) {
    case Backend::cpu: return "cpu";
    case Backend::reference: return "reference";
    case Backend::webgpu: return "webgpu";
  }
  return "?";
}

}  // namespace fucina
