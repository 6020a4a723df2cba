// The `image` argument used to accept any image on the engine (other images' environment
// secrets, tools, anonymous volumes). Now only the operator's images run: sandbox.image,
// sandbox.allowed_images (exact or repo:*), an optional label, and images built from those.
// Naming an image by id or alias never widens the list.
#include "build_fixture.h"
#include "sandbox/docker/docker_sandbox.h"

namespace build_attacks {
namespace {

class ImageNotAllowed : public ServerFixture {
 protected:
  ~ImageNotAllowed() override {
    stop();
    for (const auto& tag : tags_) {
      try {
        backend->engine().request(Method::kDelete, "/images/" + tag);
      } catch (const std::exception&) {
      }
    }
  }
  // A different image (own id, same layers as the sandbox image) named repo:tag, removed after
  // the test. (Merely re-tagging the sandbox image would be the allowed image itself.)
  std::string otherImage(const std::string& repo, const std::string& tag) {
    auto& engine = backend->engine();
    const auto container = engine
                               .request(Method::kPost, "/containers/create",
                                        json{{"Image", "sandbox-mcp/python:latest"},
                                             {"Cmd", {"true"}},
                                             {"Labels", backend->containerLabels()}})
                               .json()
                               .at("Id")
                               .get<std::string>();
    engine.request(Method::kPost,
                   "/commit?container=" + container + "&repo=" + urlEncode(repo) + "&tag=" + tag,
                   json{{"Env", {"SECRET_OF_ANOTHER_IMAGE=hunter2"}}});
    sandbox::docker::forceRemoveContainer(engine, container);
    tags_.push_back(repo + ":" + tag);
    return tags_.back();
  }
  std::size_t sandboxContainers() {
    return listIds(backend->engine(), "containers",
                   std::string(sandbox::docker::kLabelInstance) + "=" + backend->instanceId())
        .size();
  }

  std::vector<std::string> tags_;
};

TEST_F(ImageNotAllowed, OtherImagesOnTheEngineAreRefused) {
  const auto before = sandboxContainers();
  const auto sidecar_id = backend->inspectImage("sandbox-mcp/sidecar:latest");
  std::vector<std::string> attempts = {"sandbox-mcp/sidecar:latest", "sandbox-mcp/sidecar"};
  if (sidecar_id) attempts.push_back(sidecar_id->id);  // by id: same image, same answer
  for (const auto& image : attempts) {
    const auto result = call("run_shell", {{"command", "env"}, {"image", image}});
    EXPECT_TRUE(result.value("isError", false)) << image << ": " << result.dump();
    EXPECT_NE(text(result).find("sandbox.allowed_images"), std::string::npos)
        << "the refusal must say what the operator configures: " << text(result);
  }
  EXPECT_EQ(sandboxContainers(), before) << "a container was created for a refused image";
}

TEST_F(ImageNotAllowed, AnotherImageIsRefusedUntilTheOperatorListsIt) {
  const auto tag = otherImage("h3-other-" + std::to_string(::getpid()), "v1");
  const auto refused = call("run_shell", {{"command", "true"}, {"image", tag}});
  EXPECT_TRUE(refused.value("isError", false)) << refused.dump();

  const auto id = backend->inspectImage(tag).value().id;
  const auto by_id = call("run_shell", {{"command", "true"}, {"image", id}});
  EXPECT_TRUE(by_id.value("isError", false)) << by_id.dump();

  cfg.sandbox.allowed_images = {"h3-other-" + std::to_string(::getpid()) + ":*"};
  const auto allowed =
      call("run_shell", {{"command", "echo $SECRET_OF_ANOTHER_IMAGE"}, {"image", tag}});
  ASSERT_FALSE(allowed.value("isError", false)) << allowed.dump();
  EXPECT_EQ(allowed["structuredContent"]["stdout"], "hunter2\n");
}

TEST_F(ImageNotAllowed, TheDefaultImageStillWorks) {
  const auto result =
      call("run_shell", {{"command", "echo ok"}, {"image", "sandbox-mcp/python:latest"}});
  ASSERT_FALSE(result.value("isError", false)) << result.dump();
  EXPECT_EQ(result["structuredContent"]["stdout"], "ok\n");
}

}  // namespace
}  // namespace build_attacks
