// ColPack side of nanprop-bench's coloring comparison (not part of the library).
// Reads a pattern ("m n nnz" then nnz lines "row col", 0-based), colors its columns with
// ColPack's serial partial distance-2 coloring under each ordering, and prints one line per
// ordering:
// "<ORDERING> <colors> <seconds>".
// Build: g++ -O2 -std=c++11 colpack_compare.cpp -lColPack  (Debian: libcolpack-dev)
#include <ColPack/ColPackHeaders.h>
#include <chrono>
#include <cstdio>
#include <vector>

using namespace ColPack;

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: colpack_compare PATTERN_FILE\n");
        return 2;
    }
    std::FILE *in = std::fopen(argv[1], "r");
    if (!in) {
        std::perror(argv[1]);
        return 2;
    }
    unsigned long m, n, nnz;
    if (std::fscanf(in, "%lu %lu %lu", &m, &n, &nnz) != 3) return 2;
    std::vector<std::vector<unsigned int> > rows(m);
    for (unsigned long k = 0; k < nnz; k++) {
        unsigned long i, j;
        if (std::fscanf(in, "%lu %lu", &i, &j) != 2) return 2;
        rows[i].push_back((unsigned int)j);
    }
    std::fclose(in);
    // ADOL-C layout: row i is {count, col, col, ...}.
    std::vector<unsigned int *> uip2(m);
    for (unsigned long i = 0; i < m; i++) {
        uip2[i] = new unsigned int[rows[i].size() + 1];
        uip2[i][0] = (unsigned int)rows[i].size();
        for (size_t k = 0; k < rows[i].size(); k++) uip2[i][k + 1] = rows[i][k];
    }
    // Each ordering, then ColPack's serial partial distance-2 column coloring (the default
    // PartialDistanceTwoColoring of 1.0.10 runs an OpenMP speculative variant, which uses more
    // colors than sequential greedy).
    typedef int (BipartiteGraphPartialOrdering::*OrderFn)();
    struct { const char *name; OrderFn fn; } orders[] = {
        {"NATURAL", &BipartiteGraphPartialOrdering::ColumnNaturalOrdering},
        {"LARGEST_FIRST", &BipartiteGraphPartialOrdering::ColumnLargestFirstOrdering},
        {"SMALLEST_LAST", &BipartiteGraphPartialOrdering::ColumnSmallestLastOrdering},
        {"INCIDENCE_DEGREE", &BipartiteGraphPartialOrdering::ColumnIncidenceDegreeOrdering},
        {"DYNAMIC_LARGEST_FIRST", &BipartiteGraphPartialOrdering::ColumnDynamicLargestFirstOrdering},
        {"RANDOM", &BipartiteGraphPartialOrdering::ColumnRandomOrdering},
    };
    for (auto &o : orders) {
        BipartiteGraphPartialColoringInterface g(SRC_MEM_ADOLC, uip2.data(), (int)m, (int)n);
        auto t0 = std::chrono::steady_clock::now();
        (g.*(o.fn))();
        g.PartialDistanceTwoColumnColoring_serial();
        auto t1 = std::chrono::steady_clock::now();
        if (g.CheckPartialDistanceTwoColumnColoring() != _TRUE) {
            std::fprintf(stderr, "%s: ColPack's coloring failed its own check\n", o.name);
        }
        std::printf("%s %d %.6f\n", o.name, g.GetVertexColorCount(),
                    std::chrono::duration<double>(t1 - t0).count());
    }
    for (unsigned long i = 0; i < m; i++) delete[] uip2[i];
    return 0;
}
