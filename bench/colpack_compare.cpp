// ColPack side of nanprop-bench's coloring comparison (not part of the library).
// Reads a pattern ("m n nnz" then nnz lines "row col", 0-based), colors its columns with
// ColPack's serial partial distance-2 coloring under each ordering, and prints one line per
// ordering:
// "<ORDERING> <colors> <seconds>".
// With "star" before the file: the file is a symmetric Matrix Market pattern (a Hessian's),
// star-colored by ColPack's GraphColoringInterface under each ordering: the same lines, each
// followed by the colors of the vertices (so the caller checks them; GetVertexColorCount of
// 1.0.10 counts one more than the colors used, and CheckStarColoring's return is not a plain
// pass/fail).
// Build: g++ -O2 -std=c++11 colpack_compare.cpp -lColPack  (Debian: libcolpack-dev)
#include <ColPack/ColPackHeaders.h>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

using namespace ColPack;

static int star(const char *mtx_file);

int main(int argc, char **argv) {
    bool is_star = argc == 3 && std::string(argv[1]) == "star";
    if (argc != 2 && !is_star) {
        std::fprintf(stderr, "usage: colpack_compare [star] PATTERN_FILE\n");
        return 2;
    }
    const char *file = argv[argc - 1];
    if (is_star) return star(file);
    std::FILE *in = std::fopen(file, "r");
    if (!in) {
        std::perror(file);
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

// Star coloring of the symmetric Matrix Market pattern in mtx_file under each ordering.
static int star(const char *mtx_file) {
    const char *orders[] = {"NATURAL", "LARGEST_FIRST", "SMALLEST_LAST", "INCIDENCE_DEGREE",
                            "DYNAMIC_LARGEST_FIRST", "RANDOM"};
    for (const char *o : orders) {
        GraphColoringInterface g(SRC_FILE, mtx_file, "AUTO_DETECTED");
        auto t0 = std::chrono::steady_clock::now();
        g.Coloring(o, "STAR");
        auto t1 = std::chrono::steady_clock::now();
        std::vector<int> colors;
        g.GetVertexColors(colors);
        int used = 0;
        for (int c : colors) used = c + 1 > used ? c + 1 : used;
        std::printf("%s %d %.6f", o, used, std::chrono::duration<double>(t1 - t0).count());
        for (int c : colors) std::printf(" %d", c);
        std::printf("\n");
    }
    return 0;
}
