// A fixed-size bit set over node indices: the currency of candidate
// enumeration and search (covered sets, sub-graphs).
#pragma once

#include <bit>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace collage {

class IndexSet {
 public:
  IndexSet() = default;
  explicit IndexSet(size_t end_index) : size_(end_index), words_((end_index + 63) / 64, 0) {}
  IndexSet(size_t end_index, const std::vector<size_t>& indices) : IndexSet(end_index) {
    for (size_t i : indices) add(i);
  }

  size_t end_index() const { return size_; }
  void add(size_t i) { words_.at(i / 64) |= bit(i); }
  void remove(size_t i) { words_.at(i / 64) &= ~bit(i); }
  bool contains(size_t i) const { return i < size_ && (words_[i / 64] & bit(i)) != 0; }

  size_t popcount() const {
    size_t n = 0;
    for (uint64_t w : words_) n += static_cast<size_t>(std::popcount(w));
    return n;
  }
  bool empty() const {
    for (uint64_t w : words_)
      if (w) return false;
    return true;
  }
  bool intersects(const IndexSet& other) const {
    for (size_t i = 0; i < words_.size() && i < other.words_.size(); ++i)
      if (words_[i] & other.words_[i]) return true;
    return false;
  }
  bool is_subset_of(const IndexSet& other) const {
    for (size_t i = 0; i < words_.size(); ++i)
      if (words_[i] & ~(i < other.words_.size() ? other.words_[i] : 0)) return false;
    return true;
  }
  IndexSet operator|(const IndexSet& o) const {
    return combine(o, [](uint64_t a, uint64_t b) { return a | b; });
  }
  IndexSet operator&(const IndexSet& o) const {
    return combine(o, [](uint64_t a, uint64_t b) { return a & b; });
  }
  IndexSet operator-(const IndexSet& o) const {
    return combine(o, [](uint64_t a, uint64_t b) { return a & ~b; });
  }
  bool operator==(const IndexSet& o) const = default;

  // First index >= from that is NOT in the set, or end_index().
  size_t first_outside(size_t from = 0) const {
    for (size_t i = from; i < size_; ++i)
      if (!contains(i)) return i;
    return size_;
  }
  std::vector<size_t> indices() const {
    std::vector<size_t> out;
    for (size_t w = 0; w < words_.size(); ++w)
      for (uint64_t bits = words_[w]; bits; bits &= bits - 1)
        out.push_back(w * 64 + static_cast<size_t>(std::countr_zero(bits)));
    return out;
  }
  std::string to_string() const {  // "{1,4,5}"
    std::string s = "{";
    for (size_t i : indices()) {
      if (s.size() > 1) s += ',';
      s += std::to_string(i);
    }
    return s + "}";
  }
  size_t hash() const {
    size_t h = size_;
    for (uint64_t w : words_) h = h * 1000003u ^ std::hash<uint64_t>()(w);
    return h;
  }

 private:
  static uint64_t bit(size_t i) { return uint64_t{1} << (i % 64); }
  template <class F>
  IndexSet combine(const IndexSet& o, F f) const {
    IndexSet r(std::max(size_, o.size_));
    for (size_t i = 0; i < r.words_.size(); ++i)
      r.words_[i] = f(i < words_.size() ? words_[i] : 0, i < o.words_.size() ? o.words_[i] : 0);
    return r;
  }
  size_t size_ = 0;
  std::vector<uint64_t> words_;
};

}  // namespace collage
