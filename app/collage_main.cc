// `collage`: the command-line twin of the explorer (app/cli_main.cc).
#include "app/cli_commands.h"

int main(int argc, char** argv) { return collage::cli::run_cli(argc, argv); }
