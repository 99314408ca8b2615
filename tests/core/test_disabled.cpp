#include <gtest/gtest.h>

#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"

int record_with_macros_compiled_out(int n);

TEST(CompiledOut, MacrosRecordNothingAndEvaluateNothing) {
  ringtrace::Session session;
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  session.add_exporter(memory);
  session.start();
  const int evaluated = record_with_macros_compiled_out(100);
  RINGTRACE_INSTANT("enabled here");  // this file is compiled with the macros on
  session.stop();
  EXPECT_EQ(evaluated, 0);
  ASSERT_EQ(memory->trace().events.size(), 1u);
}
