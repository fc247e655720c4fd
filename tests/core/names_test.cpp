#include "names/names.hpp"

#include <gtest/gtest.h>

namespace {

using hotscope::names::short_function_name;

TEST(FunctionName, StripsReturnTypeParametersAndBindings) {
  EXPECT_EQ(short_function_name("void Parser::parse(const std::string&)"), "Parser::parse");
  EXPECT_EQ(short_function_name("int main()"), "main");
  EXPECT_EQ(short_function_name("std::map<int, int> make_map(int) const"), "make_map");
  EXPECT_EQ(short_function_name("T ns::twice(T) [with T = int]"), "ns::twice");
  EXPECT_EQ(short_function_name("void {anonymous}::helper()"), "{anonymous}::helper");
  EXPECT_EQ(short_function_name("void (anonymous namespace)::helper(int)"),
            "(anonymous namespace)::helper");
  EXPECT_EQ(short_function_name("void S::operator()(int) const"), "S::operator()");
  EXPECT_EQ(short_function_name("void f<std::pair<int, int> >(int)"), "f<std::pair<int, int> >");
  EXPECT_EQ(short_function_name("Worker::Worker(int)"), "Worker::Worker");
}

TEST(FunctionName, LeavesOtherTextAlone) {
  EXPECT_EQ(short_function_name("main()::<lambda()>"), "main()::<lambda()>");
  EXPECT_EQ(short_function_name("parse request"), "parse request");
  EXPECT_EQ(short_function_name(""), "");
}

} // namespace

TEST(Demangle, MangledNamesGetTheirParametersAndCNamesStay) {
  EXPECT_EQ(hotscope::names::demangle("_Z9make_nodei"), "make_node(int)");
  EXPECT_EQ(hotscope::names::demangle("f"), "f"); // not "float"
  EXPECT_EQ(hotscope::names::demangle("_Zbroken"), "_Zbroken");
}
