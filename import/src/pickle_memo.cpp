#include "pickle_memo.h"

namespace gpudiag::import::pickle {

void Memo::put(std::uint64_t key, const Value& v) {
  if (key >= dense_.size() && key <= dense_.size() + kDenseGap) {
    dense_.resize(key + 1);
    stored_.resize(key + 1);
  }
  if (key < dense_.size()) {
    count_ += !stored_[key];
    dense_[key] = v;
    stored_[key] = true;
    return;
  }
  count_ += sparse_.insert_or_assign(key, v).second;
}

const Value* Memo::get(std::uint64_t key) const {
  if (key < dense_.size()) return stored_[key] ? &dense_[key] : nullptr;
  auto it = sparse_.find(key);
  return it == sparse_.end() ? nullptr : &it->second;
}

void Memo::release(std::uint64_t key) {
  Value released;
  released.kind = Value::Kind::Released;
  if (key < dense_.size()) dense_[key] = released;
  else if (auto it = sparse_.find(key); it != sparse_.end()) it->second = released;
}

}  // namespace gpudiag::import::pickle
