#include "transport/body_budget.h"

#include <gtest/gtest.h>

#include <memory>
#include <utility>

namespace transport {
namespace {

TEST(BodyBudget, ReservationsBeyondTheBudgetAreRefusedUntilOneIsGivenBack) {
  auto budget = std::make_shared<BodyBudget>(100);
  BodyBudget::Reservation first;
  BodyBudget::Reservation second;
  BodyBudget::Reservation third;
  ASSERT_TRUE(budget->tryReserve(60, first));
  ASSERT_TRUE(budget->tryReserve(40, second));
  EXPECT_EQ(budget->inUse(), 100U);
  EXPECT_FALSE(budget->tryReserve(1, third));
  EXPECT_EQ(third.bytes(), 0U);
  first.reset();
  EXPECT_EQ(budget->inUse(), 40U);
  EXPECT_TRUE(budget->tryReserve(60, third));
}

TEST(BodyBudget, MoreThanTheWholeBudgetIsNeverGrantedAndNothingOverflows) {
  auto budget = std::make_shared<BodyBudget>(100);
  BodyBudget::Reservation held;
  EXPECT_FALSE(budget->tryReserve(101, held));
  ASSERT_TRUE(budget->tryReserve(50, held));
  BodyBudget::Reservation huge;
  EXPECT_FALSE(budget->tryReserve(static_cast<std::size_t>(-1), huge));  // no wrap-around
  EXPECT_EQ(budget->inUse(), 50U);
}

TEST(BodyBudget, AMovedOrDestroyedReservationGivesItsBytesBackOnce) {
  auto budget = std::make_shared<BodyBudget>(100);
  {
    BodyBudget::Reservation original;
    ASSERT_TRUE(budget->tryReserve(70, original));
    BodyBudget::Reservation moved(std::move(original));
    EXPECT_EQ(moved.bytes(), 70U);
    BodyBudget::Reservation assigned;
    assigned = std::move(moved);
    EXPECT_EQ(budget->inUse(), 70U);
  }
  EXPECT_EQ(budget->inUse(), 0U);
  BodyBudget::Reservation empty;
  EXPECT_TRUE(budget->tryReserve(0, empty));  // a body-less request needs nothing
  EXPECT_EQ(budget->inUse(), 0U);
}

TEST(BodyBudget, AReservationGrowsAsBytesArriveAndStopsAtTheBudget) {
  auto budget = std::make_shared<BodyBudget>(100);
  BodyBudget::Reservation body;
  ASSERT_TRUE(budget->tryGrow(body, 30));
  ASSERT_TRUE(budget->tryGrow(body, 80));
  EXPECT_TRUE(budget->tryGrow(body, 50));  // never shrinks
  EXPECT_EQ(body.bytes(), 80U);
  BodyBudget::Reservation other;
  EXPECT_FALSE(budget->tryGrow(other, 21));
  EXPECT_EQ(other.bytes(), 0U);
  EXPECT_FALSE(budget->tryGrow(body, 101));
  EXPECT_EQ(body.bytes(), 80U);  // a refused growth leaves the reservation as it was
  body.reset();
  EXPECT_TRUE(budget->tryGrow(other, 100));
  EXPECT_EQ(budget->inUse(), 100U);
}

}  // namespace
}  // namespace transport
