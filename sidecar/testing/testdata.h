// The agent's test fixtures (sidecar/testdata/, or $BOOSTER_AGENT_TESTDATA as the tests'
// CMake rules set it): a file's whole contents, "" (and a test failure) when unreadable.
//
//   ParseProcStat(booster::agent_testing::Fixture("proc_stat.txt"));
#ifndef BOOSTER_SIDECAR_TESTING_TESTDATA_H_
#define BOOSTER_SIDECAR_TESTING_TESTDATA_H_

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace booster::agent_testing {

inline std::string Fixture(const std::string& name) {
  const char* dir = std::getenv("BOOSTER_AGENT_TESTDATA");
  const std::string path = std::string(dir != nullptr ? dir : "sidecar/testdata") + "/" + name;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ADD_FAILURE() << "cannot read test fixture " << path;
    return "";
  }
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace booster::agent_testing

#endif  // BOOSTER_SIDECAR_TESTING_TESTDATA_H_
