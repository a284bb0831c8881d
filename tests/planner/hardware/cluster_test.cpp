// Clusters: the bundled four with link rates worked out by hand from their datasheets and the
// paper, --gpu clusters with their overrides, and user files whose defects are named.
#include <gtest/gtest.h>

#include <filesystem>

#include <string>
#include <vector>

#include "hardware_test_support.h"
#include "pipescope/planner/cluster.h"

namespace pipescope::planner {
namespace {

using testing::read_source_file;
using testing::write_temp_file;

Cluster load(const std::string& name) {
  auto cluster = load_cluster(name);
  EXPECT_TRUE(cluster.ok()) << cluster.error().message;
  return cluster.ok() ? *cluster : Cluster{};
}

TEST(BundledClusters, AreTheNamesDesignMdPromises) {
  EXPECT_EQ(known_cluster_names(), (std::vector<std::string>{"dgx-a100", "dgx-h100", "kalos", "seren"}));
}

TEST(BundledClusters, EachLoadsUnderItsOwnNameWithASource) {
  for (const std::string& name : known_cluster_names()) {
    const Cluster cluster = load(name);
    EXPECT_EQ(cluster.name, name);
    EXPECT_FALSE(cluster.source.empty()) << name;
    EXPECT_EQ(cluster.gpus_per_node, 8) << name;
  }
}

TEST(BundledClusters, EmbeddedCopyMatchesTheFileOnDisk) {
  for (const std::string& name : known_cluster_names()) {
    const std::string path =
        write_temp_file(name + ".json", read_source_file("planner/hardware/data/clusters/" + name + ".json"));
    auto from_disk = load_cluster(path);
    ASSERT_TRUE(from_disk.ok()) << from_disk.error().message;
    EXPECT_EQ(*from_disk, load(name)) << name;
  }
}

TEST(PaperClusters, SerenHasOne200GbpsNicPerNode) {
  const Cluster seren = load("seren");
  EXPECT_EQ(seren.gpu.name, "a100-80gb");
  EXPECT_EQ(seren.nics_per_node, 1);
  EXPECT_DOUBLE_EQ(seren.inter_node_bytes_per_s, 200e9 / 8);  // 25 GB/s
  EXPECT_DOUBLE_EQ(seren.intra_node_bytes_per_s, 600e9 / 2);  // NVLink3, one direction
  EXPECT_EQ(seren.nodes, 286);
}

TEST(PaperClusters, KalosHasFive200GbpsNicsPerNode) {
  const Cluster kalos = load("kalos");
  EXPECT_EQ(kalos.gpu.name, "a100-80gb");
  EXPECT_EQ(kalos.nics_per_node, 5);
  EXPECT_DOUBLE_EQ(kalos.nic_bytes_per_s, 200e9 / 8);
  EXPECT_DOUBLE_EQ(kalos.inter_node_bytes_per_s, 5 * 200e9 / 8);  // 125 GB/s
  EXPECT_EQ(kalos.nodes, 302);
}

TEST(PaperClusters, TogetherHoldThe4704GpusOfThePaper) {
  EXPECT_EQ((load("seren").nodes + load("kalos").nodes) * 8, 4704);
}

TEST(DgxClusters, CountOnlyTheComputeNics) {
  const Cluster a100 = load("dgx-a100");
  EXPECT_EQ(a100.gpu.name, "a100-80gb");
  EXPECT_DOUBLE_EQ(a100.inter_node_bytes_per_s, 8 * 200e9 / 8);  // 8x HDR
  EXPECT_DOUBLE_EQ(a100.intra_node_bytes_per_s, 300e9);
  const Cluster h100 = load("dgx-h100");
  EXPECT_EQ(h100.gpu.name, "h100-80gb");
  EXPECT_DOUBLE_EQ(h100.inter_node_bytes_per_s, 8 * 400e9 / 8);  // 8x NDR
  EXPECT_DOUBLE_EQ(h100.intra_node_bytes_per_s, 900e9 / 2);      // NVLink4, one direction
  EXPECT_EQ(h100.nodes, 0);                                      // a node type, not a cluster size
}

TEST(LoadCluster, UnknownNameListsTheKnownOnes) {
  auto cluster = load_cluster("selene");
  ASSERT_FALSE(cluster.ok());
  EXPECT_EQ(cluster.error().message,
            "unknown cluster 'selene'; known clusters: dgx-a100, dgx-h100, kalos, seren (or pass a cluster "
            "JSON file, see docs/calibration-format.md)");
}

TEST(LoadCluster, MissingFileSaysItCannotRead) {
  auto cluster = load_cluster("/nonexistent/dir/cluster.json");
  ASSERT_FALSE(cluster.ok());
  EXPECT_EQ(cluster.error().message.rfind("cannot read cluster file '/nonexistent/dir/cluster.json': ", 0),
            0u)
      << cluster.error().message;
  // A directory opens but does not read: refused the same way, with the system's reason.
  const std::string dir = ::testing::TempDir() + "pipescope-cluster-dir.json";
  std::filesystem::create_directories(dir);
  auto from_dir = load_cluster(dir);
  ASSERT_FALSE(from_dir.ok());
  EXPECT_EQ(from_dir.error().message, "cannot read cluster file '" + dir + "': Is a directory");
}

TEST(GpuClusters, DefaultToEightGpusAndEight400GbpsNics) {
  auto cluster = make_gpu_cluster("h200-141gb");
  ASSERT_TRUE(cluster.ok()) << cluster.error().message;
  EXPECT_EQ(cluster->name, "gpu:h200-141gb");
  EXPECT_EQ(cluster->gpu.name, "h200-141gb");
  EXPECT_EQ(cluster->gpus_per_node, 8);
  EXPECT_DOUBLE_EQ(cluster->inter_node_bytes_per_s, 8 * 400e9 / 8);
  EXPECT_DOUBLE_EQ(cluster->intra_node_bytes_per_s, 900e9 / 2);
  EXPECT_FALSE(cluster->source.empty());
}

TEST(GpuClusters, GpusPerNodeAndInterNodeGbpsOverride) {
  auto cluster = make_gpu_cluster("a100-80gb", 4, 800);
  ASSERT_TRUE(cluster.ok()) << cluster.error().message;
  EXPECT_EQ(cluster->gpus_per_node, 4);
  EXPECT_DOUBLE_EQ(cluster->inter_node_bytes_per_s, 800e9 / 8);  // 100 GB/s per node
  EXPECT_DOUBLE_EQ(cluster->nic_bytes_per_s, 800e9 / 8 / cluster->nics_per_node);
  EXPECT_NE(cluster->source.find("--inter-node-gbps 800"), std::string::npos) << cluster->source;
}

TEST(GpuClusters, OverridesApplyToBundledClustersToo) {
  auto cluster = with_node_overrides(load("seren"), std::nullopt, 400);
  ASSERT_TRUE(cluster.ok()) << cluster.error().message;
  EXPECT_DOUBLE_EQ(cluster->inter_node_bytes_per_s, 400e9 / 8);
  EXPECT_EQ(cluster->gpus_per_node, 8);
}

TEST(GpuClusters, BadOverridesAndUnknownGpusAreRefused) {
  auto zero_gpus = make_gpu_cluster("a100-80gb", 0);
  ASSERT_FALSE(zero_gpus.ok());
  EXPECT_EQ(zero_gpus.error().message, "--gpus-per-node must be a positive integer, got 0");
  auto negative_rate = make_gpu_cluster("a100-80gb", std::nullopt, -5);
  ASSERT_FALSE(negative_rate.ok());
  EXPECT_EQ(negative_rate.error().message,
            "--inter-node-gbps must be a positive number of Gb/s per node, got -5");
  auto unknown = make_gpu_cluster("v100-32gb");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message,
            "unknown GPU 'v100-32gb'; known GPUs: a100-80gb, b200-180gb, h100-80gb, h200-141gb");
}

constexpr const char* kUserCluster = R"({
  "schema_version": 1, "name": "lab", "gpu": "h100-80gb", "gpus_per_node": 4, "nics_per_node": 2,
  "nic_bytes_per_s": 50e9, "source": "our lab's purchase order"})";

TEST(UserClusterFiles, LoadFromAPath) {
  auto cluster = load_cluster(write_temp_file("lab.json", kUserCluster));
  ASSERT_TRUE(cluster.ok()) << cluster.error().message;
  EXPECT_EQ(cluster->name, "lab");
  EXPECT_EQ(cluster->gpus_per_node, 4);
  EXPECT_DOUBLE_EQ(cluster->inter_node_bytes_per_s, 2 * 50e9);
  EXPECT_DOUBLE_EQ(cluster->intra_node_bytes_per_s, 450e9);  // the GPU's NVLink by default
}

TEST(UserClusterFiles, MayDescribeTheirGpuInlineAndTheirIntraNodeLink) {
  auto cluster = parse_cluster_json(R"({
    "schema_version": 1, "name": "pcie-box", "gpus_per_node": 4, "nics_per_node": 1, "nic_bytes_per_s": 12.5e9,
    "intra_node_bytes_per_s": 32e9, "source": "vendor sheet",
    "gpu": {"name": "l40s-48gb", "memory_bytes": 48e9, "peak_dense_bf16_flops_per_s": 362e12,
            "peak_dense_fp8_flops_per_s": 733e12, "hbm_bytes_per_s": 864e9, "nvlink_bytes_per_s": 32e9,
            "source": "vendor sheet"}})",
                                    "cluster file 'pcie-box.json'");
  ASSERT_TRUE(cluster.ok()) << cluster.error().message;
  EXPECT_EQ(cluster->gpu.name, "l40s-48gb");
  EXPECT_EQ(cluster->gpu.memory_bytes, 48000000000);
  EXPECT_DOUBLE_EQ(cluster->intra_node_bytes_per_s, 32e9);
}

std::string error_for(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
  auto cluster = parse_cluster_json(text, "cluster file 'lab.json'");
  return cluster.ok() ? "(parsed)" : cluster.error().message;
}

TEST(UserClusterFiles, DefectsNameTheField) {
  const std::string base = kUserCluster;
  EXPECT_EQ(error_for(base, R"("gpus_per_node": 4)", R"("gpus_per_node": -8)"),
            "cluster file 'lab.json': field 'gpus_per_node' must be a positive integer, got -8");
  EXPECT_EQ(error_for(base, R"("nic_bytes_per_s": 50e9)", R"("nic_bytes_per_s": 0)"),
            "cluster file 'lab.json': field 'nic_bytes_per_s' must be a positive number, got 0");
  EXPECT_EQ(error_for(base, R"("gpus_per_node": 4)", R"("gpus_per_node": 2.5)"),
            "cluster file 'lab.json': field 'gpus_per_node' must be a positive integer, got 2.5");
  EXPECT_EQ(
      error_for(base, R"("nics_per_node": 2)", R"("nics_per_node": 1e10)"),
      "cluster file 'lab.json': field 'nics_per_node' must be a positive integer no larger than 2147483647, "
      "got 10000000000.0");
  EXPECT_EQ(error_for(base, R"("nics_per_node": 2,)", ""),
            "cluster file 'lab.json': field 'nics_per_node' is missing");
  EXPECT_EQ(error_for(base, R"("gpus_per_node")", R"("gpus_per_nod")"),
            "cluster file 'lab.json': unknown field 'gpus_per_nod' (known here: schema_version, name, gpu, "
            "gpus_per_node, nodes, nics_per_node, nic_bytes_per_s, intra_node_bytes_per_s, source)");
  EXPECT_EQ(error_for(base, R"("h100-80gb")", R"("h100")"),
            "cluster file 'lab.json': field 'gpu': unknown GPU 'h100'; known GPUs: a100-80gb, b200-180gb, "
            "h100-80gb, h200-141gb");
  EXPECT_EQ(error_for(base, R"("h100-80gb")", "80"),
            "cluster file 'lab.json': field 'gpu' must be a GPU name or a GPU object, got 80");
  EXPECT_EQ(error_for(base, R"("h100-80gb")", R"({"name": "x"})"),
            "cluster file 'lab.json': field 'gpu.memory_bytes' is missing");
  EXPECT_EQ(error_for(base, R"("schema_version": 1)", R"("schema_version": 3)"),
            "cluster file 'lab.json': schema_version 3 is newer than this pipescope understands (1); upgrade "
            "pipescope, or write the file with schema_version 1");
  EXPECT_EQ(error_for(base, R"("schema_version": 1,)", ""),
            "cluster file 'lab.json': field 'schema_version' is missing");
}

TEST(UserClusterFiles, NotJsonAtAll) {
  auto cluster = load_cluster(write_temp_file("broken.json", "gpus_per_node = 8\n"));
  ASSERT_FALSE(cluster.ok());
  EXPECT_NE(cluster.error().message.find("broken.json': not valid JSON (syntax error at byte "),
            std::string::npos)
      << cluster.error().message;
}

TEST(UserClusterFiles, ATopLevelThatIsNotAnObjectIsNamed) {
  auto cluster = load_cluster(write_temp_file("list.json", "[8, 8]"));
  ASSERT_FALSE(cluster.ok());
  EXPECT_NE(cluster.error().message.find("list.json': the top level must be a JSON object, got an array"),
            std::string::npos)
      << cluster.error().message;
}

}  // namespace
}  // namespace pipescope::planner
