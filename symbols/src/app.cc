// app-pie / app-nopie: a C++ executable that drives libwidget and libgadget.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "gadget.h"
#include "widget.h"

namespace app {

struct Options {
  int rounds = 3;
  int size = 10;
};

namespace {

__attribute__((always_inline)) inline int scale(int x, int by) {
  return x * by + 1;
}

// Forced inline: Session::run -> step -> scale.
__attribute__((always_inline)) inline int step(int i, const Options& o) {
  return scale(i, o.size) % 97;
}

template <typename F>
__attribute__((noinline)) int repeat(int n, F f) {
  int acc = 0;
  for (int i = 0; i < n; ++i)
    acc += f(i);
  return acc;
}

}  // namespace

class Session {
 public:
  explicit Session(const Options& o);
  int run();

 private:
  Options opts_;
  std::unique_ptr<int[]> scratch_;
  std::vector<std::string> log_;
};

Session::Session(const Options& o) : opts_(o), scratch_(new int[o.size + 1]()) {}

__attribute__((noinline)) int Session::run() {
  int total = 0;
  for (int r = 0; r < opts_.rounds; ++r) {
    scratch_[r % (opts_.size + 1)] = step(r, opts_);
    total += widget_demo(opts_.size + r);
    total += gadget_run(opts_.size * (r + 1));
    log_.push_back("round " + std::to_string(r));
  }
  total += repeat(opts_.rounds, [this](int i) { return scratch_[i % (opts_.size + 1)]; });
  return total;
}

__attribute__((noinline)) Options parse(int argc, char** argv) {
  Options o;
  if (argc > 1)
    o.rounds = std::atoi(argv[1]);
  if (argc > 2)
    o.size = std::atoi(argv[2]);
  return o;
}

}  // namespace app

int main(int argc, char** argv) {
  app::Options o = app::parse(argc, argv);
  auto s = std::make_unique<app::Session>(o);
  int total = s->run();
  std::printf("total %d\n", total);
  return total == 0;
}
