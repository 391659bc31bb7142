// p2pnode-agent entry point.
namespace p2pnode::agent {
int run_agent(int argc, char** argv);
}

int main(int argc, char** argv) { return p2pnode::agent::run_agent(argc, argv); }
