// `mcgwctl capture` against a real mcgwd on net_null vdevs (net_null's RX
// never stops: all-zero 64-byte frames): the pcapng file tshark reads, the
// filter compiled by libpcap and run in the workers, -w - into a pipe,
// Ctrl-C, one capture at a time, refusals, and the counters.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "tests/support/daemon.hpp"

namespace mcgw::test {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

class CaptureTest : public DaemonTest {
 protected:
  void SetUp() override {
    DaemonTest::SetUp();
    writeFile(config_, nullConfig(socket_, prefix_));
    start();
  }
  std::string capture(const std::string& args) {
    return kMcgwctl + " --socket " + socket_ + " capture " + args;
  }
  // The packets tshark reads from a pcapng file (-1: tshark failed).
  int packets(const std::string& file) {
    CommandResult r = run("tshark -r " + file + " -T fields -e frame.len");
    if (r.code != 0) {
      ADD_FAILURE() << "tshark -r " << file << ": " << r.err;
      return -1;
    }
    int n = 0;
    for (char ch : r.out) {
      n += ch == '\n';
    }
    return n;
  }
  json captureView() { return json::parse(ctl("show counters --json").out)["capture"]; }
  void waitInactive() {
    for (int i = 0; i < 50 && captureView().value("active", true); ++i) {
      std::this_thread::sleep_for(100ms);
    }
  }
};

TEST_F(CaptureTest, CountedCaptureIsAPcapngFileTsharkReads) {
  const std::string file = dir_.file("wan0.pcapng");
  CommandResult r = run(capture("wan0 --count 5 -w " + file));
  ASSERT_EQ(r.code, 0) << r.out << r.err << log();
  EXPECT_NE(r.err.find("capturing on port wan0"), std::string::npos) << r.err;
  EXPECT_EQ(packets(file), 5);
  // What each frame is: 64 bytes received on wan0 (net_null's frames).
  CommandResult f = run("tshark -r " + file + " -T fields -e frame.len -e frame.cap_len");
  EXPECT_NE(f.out.find("64\t64"), std::string::npos) << f.out;
  waitInactive();
  json v = captureView();
  EXPECT_EQ(v["active"], false);
  EXPECT_EQ(v["sessions"], 1);
  EXPECT_EQ(v["written"], 5);
  EXPECT_NE(log().find("capture on port wan0 ended: 5 packets captured"), std::string::npos)
      << log();
}

TEST_F(CaptureTest, FilterRunsInTheWorkersAndSnaplenCuts) {
  // net_null's frames have EtherType 0: this filter takes all of them.
  const std::string all = dir_.file("all.pcapng");
  CommandResult r = run(capture("lan0 --filter 'ether proto 0' --snaplen 64 --count 3 -w " + all));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(packets(all), 3);
  waitInactive();
  // This one takes none: the file is a valid pcapng with no packet when
  // Ctrl-C ends the capture.
  const std::string none = dir_.file("none.pcapng");
  Process p({kMcgwctl, "--socket", socket_, "capture", "lan0", "--filter", "icmp", "-w", none}, {},
            dir_.file("none.log"));
  for (int i = 0; i < 50 && !captureView().value("active", false); ++i) {
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(captureView()["active"], true);
  std::this_thread::sleep_for(500ms);
  p.signal(SIGINT);
  EXPECT_EQ(p.wait(5s), 0) << readFile(dir_.file("none.log"));
  EXPECT_NE(readFile(dir_.file("none.log")).find("capture ended"), std::string::npos);
  EXPECT_EQ(packets(none), 0);
  waitInactive();
  EXPECT_EQ(captureView()["active"], false) << "the reader closed: the capture ends";
  EXPECT_NE(log().find("the reader closed its end"), std::string::npos) << log();
}

TEST_F(CaptureTest, StdoutIntoAPipe) {
  CommandResult r =
      run(capture("wan0 --count 4 -w -") + " | tshark -r - -T fields -e frame.number | wc -l");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(std::stoi(r.out), 4) << r.out << r.err;
}

TEST_F(CaptureTest, RefusalsAreClearAndChangeNothing) {
  CommandResult r = run(capture("wan0 --filter 'tcp port' -w " + dir_.file("x.pcapng")));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("filter:"), std::string::npos) << r.err;
  r = run(capture("nosuch -w " + dir_.file("x.pcapng")));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("\"nosuch\" is no port, line (PEER/LINE) or tenant"), std::string::npos)
      << r.err;
  r = run(capture("wan0 --snaplen 10 -w " + dir_.file("x.pcapng")));
  EXPECT_NE(r.code, 0);
  // One at a time: a second capture is refused while the first runs.
  const std::string first = dir_.file("first.pcapng");
  Process running(
      {kMcgwctl, "--socket", socket_, "capture", "wan0", "--filter", "icmp", "-w", first}, {},
      dir_.file("first.log"));
  for (int i = 0; i < 50 && !captureView().value("active", false); ++i) {
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(captureView()["active"], true);
  r = run(capture("lan0 -w " + dir_.file("second.pcapng")));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("a capture is running (port wan0)"), std::string::npos) << r.err;
  running.signal(SIGINT);
  EXPECT_EQ(running.wait(5s), 0) << readFile(dir_.file("first.log"));
  waitInactive();
  EXPECT_EQ(captureView()["active"], false);
  // The daemon is as healthy as before.
  EXPECT_EQ(status()["health"]["state"], "healthy");
}

}  // namespace
}  // namespace mcgw::test
