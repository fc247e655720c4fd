// The agent's HTTP request parser and its answers' memory budget, without a socket.
#include "agent/answer.hpp"
#include "agent/http_parser.hpp"

#include <gtest/gtest.h>

#include <string>
#include <thread>

namespace {

using hotscope::agent::Answer;
using hotscope::agent::Budget;
using hotscope::agent::parse_request;
using hotscope::agent::ParsedRequest;
using hotscope::agent::wants_openmetrics;
using State = ParsedRequest::State;

ParsedRequest parse(const std::string& head) {
  return parse_request(head);
}

// RFC 9112 §6.3: two Content-Length headers that disagree make the message's length unknown.
TEST(HttpParser, ConflictingContentLengthsAre400) {
  const ParsedRequest parsed = parse("POST /v1/reset HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                                     "Content-Length: 6\r\n\r\nhello");
  EXPECT_EQ(parsed.state, State::Bad);
  EXPECT_EQ(parsed.status, 400u);
  EXPECT_EQ(parsed.problem, "two Content-Length headers disagree");
  // The same length twice is one length.
  const ParsedRequest same = parse("POST /v1/reset HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                                   "content-length: 5\r\n\r\nhello");
  EXPECT_EQ(same.state, State::Complete);
  EXPECT_TRUE(same.request.has_body);
  EXPECT_EQ(parse("GET /v1/info HTTP/1.1\r\nHost: x\r\nContent-Length: 5x\r\n\r\n").status, 400u);
  EXPECT_EQ(
      parse("GET /v1/info HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n")
          .status,
      400u);
  EXPECT_EQ(parse("GET /v1/info HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: "
                  "chunked\r\n\r\n")
                .status,
            400u);
}

// RFC 9112 §5.1: no whitespace between a header's name and its colon.
TEST(HttpParser, WhitespaceBeforeAColonIs400) {
  for (const char* header : {"Host : x", "Host\t: x", "Accept : */*"}) {
    const ParsedRequest parsed =
        parse(std::string("GET /v1/info HTTP/1.1\r\nHost: x\r\n") + header + "\r\n\r\n");
    EXPECT_EQ(parsed.state, State::Bad) << header;
    EXPECT_EQ(parsed.status, 400u) << header;
    EXPECT_EQ(parsed.problem, "whitespace between a header's name and its colon") << header;
  }
  EXPECT_EQ(parse("GET /v1/info HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n").status, 400u);
  EXPECT_EQ(parse("GET /v1/info HTTP/1.1\r\nHost: x\r\nno colon\r\n\r\n").status, 400u);
  EXPECT_EQ(parse("GET /v1/info HTTP/1.1\r\nHost: x\r\nA: b\x01\r\n\r\n").status, 400u);
}

TEST(HttpParser, RequestLineTargetAndQuery) {
  const ParsedRequest parsed =
      parse("\r\nGET /v1/%69nfo?format=%74able&seconds=1.5&flag&&a+b=c%20d HTTP/1.1\r\n"
            "Host: localhost\r\nAccept: */*\r\n\r\n");
  ASSERT_EQ(parsed.state, State::Complete) << parsed.problem;
  EXPECT_EQ(parsed.request.method, "GET");
  EXPECT_EQ(parsed.request.path, "/v1/info");
  EXPECT_FALSE(parsed.request.has_body);
  EXPECT_FALSE(parsed.http10);
  const std::vector<std::pair<std::string, std::string>> query{
      {"format", "table"}, {"seconds", "1.5"}, {"flag", ""}, {"a b", "c d"}};
  EXPECT_EQ(parsed.request.query, query);
  // %XX of a control character leaves the text as it came.
  EXPECT_EQ(parse("GET /v1/info%00.json HTTP/1.1\r\nHost: x\r\n\r\n").request.path,
            "/v1/info%00.json");
  EXPECT_EQ(parse("GET /v1/stats?format=json%00table HTTP/1.1\r\nHost: x\r\n\r\n").request.query,
            (std::vector<std::pair<std::string, std::string>>{{"format", "json%00table"}}));
  // More parameters than any endpoint takes: cut, not parsed.
  std::string many = "a=1";
  for (int i = 1; i < 65; ++i) {
    many += "&a=1";
  }
  const ParsedRequest cut = parse("GET /v1/stats?" + many + " HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_TRUE(cut.request.query_cut);
  EXPECT_TRUE(cut.request.query.empty());
  EXPECT_TRUE(parse("GET / HTTP/1.0\r\n\r\n").http10); // HTTP/1.0 needs no Host
}

TEST(HttpParser, BadRequestLinesAndSizes) {
  EXPECT_EQ(parse("GET /v1/heap HTTP/9.9\r\nHost: x\r\n\r\n").status, 505u);
  for (const char* line :
       {"GET /v1/heap", "GET", "GET /v1/heap HTTP/1.1 x", "GE T /v1/info HTTP/1.1",
        "GET v1/info HTTP/1.1", "GET * HTTP/1.1", "\x01\x02 / HTTP/1.1"}) {
    const ParsedRequest parsed = parse(std::string(line) + "\r\nHost: x\r\n\r\n");
    EXPECT_EQ(parsed.state, State::Bad) << line;
    EXPECT_EQ(parsed.status, 400u) << line;
  }
  EXPECT_EQ(parse("GET /v1/info HTTP/1.1\r\n\r\n").status, 400u); // no Host
  EXPECT_EQ(parse("GET /v1/info HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n").status, 400u);
  EXPECT_EQ(parse("GET /v1/info HTTP/1.1\r\nHost: x\r\n").state, State::Incomplete);
  EXPECT_EQ(parse("GET /v1/stats?format=" + std::string(40'000, 'j')).status, 414u);
  EXPECT_EQ(parse("GET /v1/info HTTP/1.1\r\nX-Big: " + std::string(40'000, 'a')).status, 431u);
  EXPECT_EQ(parse(std::string(40'000, '\n')).status, 414u);
  std::string empty_lines;
  for (int i = 0; i < 20'000; ++i) {
    empty_lines += "\r\n";
  }
  EXPECT_EQ(parse(empty_lines).state, State::Bad); // nobody keeps them for ever
}

// An answer's pieces are charged while some client has not been sent them, and a writer waits
// while 1 MiB is unsent.
// docs/agent.md, "Prometheus metrics": the Accept headers, joined, and the media ranges ranked by
// their q values.
TEST(HttpParser, AcceptHeadersChooseOpenMetrics) {
  const ParsedRequest parsed =
      parse("GET /v1/metrics HTTP/1.1\r\nHost: x\r\nAccept: text/plain;q=0.5"
            "\r\naccept:  application/openmetrics-text; version=1.0.0 \r\n\r\n");
  EXPECT_EQ(parsed.request.accept, "text/plain;q=0.5,application/openmetrics-text; version=1.0.0");
  EXPECT_TRUE(wants_openmetrics(parsed.request.accept));
  EXPECT_EQ(parse("GET /v1/metrics HTTP/1.1\r\nHost: x\r\n\r\n").request.accept, "");
  // What Prometheus 2 sends.
  EXPECT_TRUE(wants_openmetrics("application/openmetrics-text;version=1.0.0,application/"
                                "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;"
                                "q=0.5,*/*;q=0.1"));
  EXPECT_TRUE(wants_openmetrics("Application/OpenMetrics-Text ; Q=0.9 , text/*;q=0.8"));
  EXPECT_TRUE(wants_openmetrics("application/openmetrics-text"));
  EXPECT_FALSE(wants_openmetrics(""));
  EXPECT_FALSE(wants_openmetrics("*/*"));
  EXPECT_FALSE(wants_openmetrics("text/plain"));
  EXPECT_FALSE(wants_openmetrics("application/openmetrics-text;q=0"));
  EXPECT_FALSE(wants_openmetrics("text/plain;version=0.0.4,application/openmetrics-text;q=0.5"));
  EXPECT_FALSE(wants_openmetrics("application/openmetrics-text;q=0.2, */*;q=0.3"));
}

TEST(AnswerBudget, PiecesAreChargedUntilEveryClientGotThemAndTheWriterWaits) {
  Budget budget;
  int wakes = 0;
  {
    Answer answer(budget, [&] { ++wakes; });
    answer.start("HTTP/1.1 200 OK\r\n\r\n", true);
    const std::string piece(hotscope::agent::kPieceBytes, 'x');
    for (std::size_t sent = 0; sent < hotscope::agent::kAheadBytes; sent += piece.size()) {
      answer.append(piece);
    }
    EXPECT_GE(budget.used(), hotscope::agent::kAheadBytes);
    std::thread writer([&] {
      answer.append(piece); // waits for room
      answer.finish();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::size_t end = budget.used();
    answer.release_before(end);
    writer.join();
    std::size_t position = end;
    while (!answer.ready(position).empty()) {
      position += answer.ready(position).size();
    }
    EXPECT_TRUE(answer.complete(position));
    EXPECT_EQ(answer.ready(end).substr(0, 7), "10000\r\n"); // a chunk of 64 KiB
    EXPECT_GT(wakes, 0);
    EXPECT_FALSE(answer.joinable());
  }
  EXPECT_EQ(budget.used(), 0u);
  Answer abandoned(budget, [] {});
  abandoned.abandon();
  EXPECT_THROW(abandoned.start("HTTP/1.1 200 OK\r\n\r\n", false), hotscope::agent::Abandoned);
  EXPECT_FALSE(budget.try_charge(hotscope::agent::kBudgetBytes + 1));
  EXPECT_TRUE(budget.try_charge(hotscope::agent::kBudgetBytes));
  EXPECT_TRUE(budget.full());
}

} // namespace
