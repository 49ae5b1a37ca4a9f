#pragma once
// Packing ([data] packing = true): a token file's documents put into rows of seq_len
// positions, so that a row holds several documents and little padding, while attention
// and positions stay within each document (model/document_layout.hpp).
//
// A document of L tokens is a segment: inputs its first L-1 tokens, targets its last L-1,
// so it takes L-1 positions of a row and gives the loss what the document alone would. A
// document longer than a row is cut into segments of seq_len + 1 tokens that overlap by
// one (as sequential rows do), each a document of its own from then on; a document of one
// token has no target and is left out. Segments go into rows best-fit in file order: each
// into the fullest row it still fits, a new row when none does. The rows depend only on
// the file and seq_len, so every rank packs the same rows.
#include <cstdint>
#include <vector>

#include "data/token_source.hpp"

namespace plait {

struct Segment {
  int64_t begin = 0, end = 0;  // file tokens [begin, end): end - begin - 1 positions
};

struct PackedRow {
  std::vector<Segment> segments;
  int64_t counted = 0;  // targets the loss mask counts
};

struct PackingReport {
  int64_t documents = 0;
  int64_t cut = 0;        // documents longer than a row, cut into segments
  int64_t left_out = 0;   // documents of one token
  int64_t rows = 0;
  int64_t positions = 0;  // rows x seq_len
  int64_t filled = 0;     // positions holding a document's token
};

std::vector<PackedRow> pack_documents(const TokenFile& file, int64_t seq_len, PackingReport* report = nullptr);

}  // namespace plait
