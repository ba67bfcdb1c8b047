// `collage` with the test-only faulty backend added: what the isolation tests run
// as the CLI and as the measure worker.
#include "app/cli_commands.h"
#include "backends/registry.h"
#include "tests/faulty/faulty_backend.h"

int main(int argc, char** argv) {
  collage::add_backend_for_tests(&collage::testing::faulty_backend());
  return collage::cli::run_cli(argc, argv);
}
